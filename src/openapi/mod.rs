//! Values and schema keywords as kube-openapi and the API server's Go code
//! read them: a JSON number's Go type and how `enum`, `multipleOf` and the
//! bounds compare it ([`numbers`]), the string formats ([`formats`]), and a
//! schema node's keywords read from raw JSON the way Go decodes
//! `JSONSchemaProps` ([`props`], [`keywords`]). The object validator, the
//! CRD validation, the CEL environment and the comparison all read through
//! here, so the four agree with the server and with each other.

pub mod formats;
pub(crate) mod keywords;
pub mod numbers;
pub(crate) mod props;
