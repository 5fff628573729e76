//! Differential test of the offline `invalidCrd` check against the real API
//! server: CRDs with one edit each, covering every rule family of the
//! server's CRD validation (metadata, names, versions, conversion,
//! structural schemas, defaults, list and map types, JSONPaths, selectable
//! fields, CEL rule fields, syntax, types and cost), accepted and refused, are created
//! with `dryRun=All` and also judged offline. The verdicts must agree, and
//! every path we report must appear in the server's message. Disagreements
//! we know of are listed in `KNOWN_LIMITATIONS` with the reason; the
//! agreement is printed (run with `--nocapture`).

use crate::support;

use std::collections::BTreeSet;

use crd_safety::crd_validation::{ErrorType, KubeVersion, validate_crd};
use kube::Client;
use serde_json::{Value, json};
use support::envtest::{ControlPlane, assert_agrees_on_matrix};
use support::fixtures;
use support::live::admin;

/// Disagreements we accept, by case label, with the reason.
const KNOWN_LIMITATIONS: &[(&str, &str)] = &[];

/// The server's verdict on creating `manifest`: `None` when accepted, its
/// message when refused.
pub async fn server_verdict(client: &Client, manifest: &Value) -> Option<String> {
    let req =
        http::Request::post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All");
    verdict(client, req, manifest).await
}

/// The server's verdict on `req` with `manifest` as its body: `None` when
/// accepted, its message when refused.
async fn verdict(client: &Client, req: http::request::Builder, manifest: &Value) -> Option<String> {
    let body = serde_json::to_vec(manifest).unwrap_or_default();
    let req = req
        .header("content-type", "application/json")
        .body(body)
        .expect("request");
    match client.request_text(req).await {
        Ok(_) => None,
        Err(kube::Error::Api(e)) => Some(format!("{} ({})", e.message, e.code)),
        Err(other) => Some(format!("transport error: {other}")),
    }
}

fn base() -> Value {
    fixtures::single(
        "widgets",
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
        }}),
    )
}

/// The spec properties of version 0.
fn spec_props(m: &mut Value) -> &mut Value {
    &mut m["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
}

fn root(m: &mut Value) -> &mut Value {
    &mut m["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

fn v0(m: &mut Value) -> &mut Value {
    &mut m["spec"]["versions"][0]
}

/// The `spec` schema node of version 0.
fn spec_schema(m: &mut Value) -> &mut Value {
    &mut root(m)["properties"]["spec"]
}

fn second_version(m: &mut Value, schema: Value) {
    let mut v = m["spec"]["versions"][0].clone();
    v["name"] = json!("v2");
    v["storage"] = json!(false);
    v["schema"]["openAPIV3Schema"] = schema;
    if let Some(a) = m["spec"]["versions"].as_array_mut() {
        a.push(v);
    }
}

/// Rules on the `spec` of [`base`] (size: integer, name: string, tags: list
/// of strings, labels: map of strings), by label.
const CEL_TYPE_CASES: &[(&str, &str)] = &[
    ("cel_type_string_plus_int_literal", "self.name + 1 == 'a'"),
    ("cel_type_int_plus_string_literal", "self.size + 'a' == 1"),
    ("cel_type_list_element_plus_int", "self.tags[0] + 1 > 0"),
    (
        "cel_type_map_value_ordered_against_int",
        "self.labels['a'] > 1",
    ),
    (
        "cel_type_comprehension_var_ordered_against_int",
        "self.tags.all(t, t > 1)",
    ),
    ("cel_type_int_equals_string", "self.size == 'a'"),
    ("cel_type_matches_int_argument", "self.name.matches(1)"),
    (
        "cel_type_exists_predicate_not_bool",
        "self.tags.exists(t, t.size())",
    ),
    (
        "cel_type_map_result_wrong_method",
        "self.tags.map(t, t.size()).all(x, x.startsWith('a'))",
    ),
    ("cel_type_int_of_string_ok", "int(self.name) > 0"),
    ("cel_type_in_an_int", "self.name in self.size"),
    ("cel_type_map_key_plus_int", "self.labels.all(k, k + 1 > 0)"),
    ("cel_type_not_of_int", "!self.size"),
    ("cel_type_and_of_int", "self.size && true"),
    ("cel_type_condition_int", "self.size ? true : false"),
    ("cel_type_duration_against_int", "duration(self.name) > 1"),
    (
        "cel_type_timestamp_against_duration",
        "timestamp(self.name) < duration('1s')",
    ),
    (
        "cel_type_method_extra_argument",
        "self.name.lowerAscii().upperAscii(1) == ''",
    ),
    (
        "cel_type_quantity_add_string",
        "quantity(self.name).add(self.name).isInteger()",
    ),
    ("cel_type_sum_of_strings", "self.tags.sum() == ''"),
    (
        "cel_type_min_of_strings_ok",
        "self.tags.size() == 0 || self.tags.min() != ''",
    ),
    ("cel_type_has_on_int", "has(self.size.x)"),
    ("cel_type_type_of_ok", "type(self.size) == int"),
    (
        "cel_type_size_equals_string",
        "self.labels.size() == self.name",
    ),
    ("cel_type_string_indexed", "self.name[0] == 'a'"),
    ("cel_type_list_indexed_by_string", "self.tags['a'] == 'b'"),
    ("cel_type_map_indexed_by_int", "self.labels[1] == 'b'"),
    (
        "cel_type_split_index_ok",
        "self.name.split(',')[0].size() > 0",
    ),
    ("cel_type_int_divided_by_double", "self.size / 2.0 > 1.0"),
    ("cel_type_double_of_int_ok", "double(self.size) / 2.0 > 1.0"),
    ("cel_type_int_equals_uint_ok", "self.size == 1u"),
    ("cel_type_int_equals_double_ok", "self.size == 1.0"),
    (
        "cel_type_exists_one_predicate_int",
        "self.tags.exists_one(t, 1)",
    ),
    (
        "cel_type_filter_predicate_string",
        "self.tags.filter(t, t).size() > 0",
    ),
    ("cel_type_global_matches_int", "matches(self.name, 1)"),
    ("cel_type_char_at_string", "self.name.charAt('a') == ''"),
    ("cel_type_index_of_int", "self.name.indexOf(1) > 0"),
    (
        "cel_type_substring_string",
        "self.name.substring('a') == ''",
    ),
    ("cel_type_trim_argument", "self.name.trim(1) == ''"),
    ("cel_type_join_on_string", "self.name.join(',') == ''"),
    ("cel_type_url_of_int", "url(self.size).getHost() == ''"),
    (
        "cel_type_ip_family_against_string",
        "ip(self.name).family() == 'a'",
    ),
    (
        "cel_type_cidr_contains_int",
        "cidr(self.name).containsIP(1)",
    ),
    ("cel_type_is_url_of_int", "isURL(self.size)"),
    (
        "cel_type_map_lookup_against_int",
        "self.labels.exists(k, self.labels[k] > 0)",
    ),
    (
        "cel_type_sets_contains_element",
        "sets.contains(self.tags, 'a')",
    ),
    (
        "cel_type_sets_contains_ok",
        "sets.contains(self.tags, ['a'])",
    ),
    ("cel_type_list_index_of_int", "self.tags.indexOf(1) >= 0"),
    (
        "cel_type_slice_string_bounds",
        "self.tags.slice('a', 2).size() > 0",
    ),
    ("cel_type_dyn_method_ok", "dyn(self.size).startsWith('a')"),
    (
        "cel_type_or_value_other_type",
        "self.?size.orValue('') == ''",
    ),
    ("cel_type_list_plus_string", "self.tags + 'a' == self.tags"),
    (
        "cel_type_list_plus_list_ok",
        "self.tags + ['a'] == self.tags",
    ),
    (
        "cel_type_map_plus_map",
        "self.labels + self.labels == self.labels",
    ),
    ("cel_type_int_in_string_list", "1 in self.tags"),
    ("cel_type_int_in_string_map", "self.size in self.labels"),
    ("cel_type_negated_string", "-self.name == ''"),
    ("cel_type_int_modulo_double", "self.size % 2.0 == 0"),
    ("cel_type_string_of_list", "string(self.tags) == ''"),
    ("cel_type_bool_of_int", "bool(self.size)"),
    (
        "cel_type_nested_comprehension_against_int",
        "self.tags.all(t, self.tags.exists(u, u == 1))",
    ),
    (
        "cel_type_optional_value_plus_string",
        "optional.of(self.size).value() + 'a' == ''",
    ),
    (
        "cel_type_last_index_of_two_strings",
        "self.name.lastIndexOf('a', 'b') > 0",
    ),
    ("cel_type_replace_int", "self.name.replace('a', 1) == ''"),
    ("cel_type_split_int", "self.name.split(1).size() > 0"),
    (
        "cel_type_lower_ascii_on_int",
        "self.size.lowerAscii() == ''",
    ),
    ("cel_type_has_on_index", "has(self.tags[0])"),
    (
        "cel_type_map_filter_not_bool",
        "self.tags.map(t, t, t).size() > 0",
    ),
    (
        "cel_type_bool_plus_int",
        "self.tags.all(t, t.size() > 0) + 1 == 2",
    ),
    ("cel_type_int_plus_uint", "int(self.size) + uint(1) > 0"),
    ("cel_type_int_ordered_against_string", "self.size < 'a'"),
    ("cel_type_mixed_list_ok", "[1, 'a'].size() == 2"),
    ("cel_type_mixed_map_ok", "{'a': 1, 'b': 'x'}.size() == 2"),
    (
        "cel_type_int_keyed_map_by_string",
        "{1: 'a'}[self.name] == 'a'",
    ),
    ("cel_type_is_sorted_on_string", "self.name.isSorted()"),
    (
        "cel_type_first_value_ok",
        "self.tags.size() == 0 || self.tags.distinct().first().value().size() > 0",
    ),
    (
        "cel_type_strings_quote_int",
        "strings.quote(self.size) == ''",
    ),
    (
        "cel_type_format_validate_int",
        "format.dns1123Label().validate(self.size).hasValue()",
    ),
    ("cel_type_matches_on_int", "self.size.matches('a')"),
    (
        "cel_type_get_hours_against_string",
        "timestamp(self.name).getHours('UTC') > 'a'",
    ),
    (
        "cel_type_semver_major_against_string",
        "semver(self.name).major() == 'a'",
    ),
    (
        "cel_type_map_field_select_ok",
        "!has(self.labels.a) || self.labels.a != ''",
    ),
    (
        "cel_type_optional_chain_on_map_ok",
        "self.?labels.?a.orValue('') == ''",
    ),
    (
        "cel_type_in_map_keys_ok",
        "self.labels.all(k, k in self.labels && self.labels[k] != '')",
    ),
    (
        "cel_type_conditional_mixed_branches",
        "(self.size > 1 ? 1 : 'a') == 1",
    ),
    (
        "cel_type_list_of_list_element_method",
        "[self.tags].all(l, l.startsWith('a'))",
    ),
    (
        "cel_type_map_comprehension_value_wrong",
        "self.labels.all(k, v, v > 1)",
    ),
    (
        "cel_type_transform_list_ok",
        "self.tags.transformList(i, t, t + 'x').size() >= 0",
    ),
    (
        "cel_type_quantity_compare_int",
        "quantity(self.name).compareTo(1) > 0",
    ),
    ("cel_type_string_times_int", "self.name * 2 == ''"),
    ("cel_type_unary_minus_uint", "-1u == 1u"),
    ("cel_type_size_method_on_int", "self.size.size() > 0"),
    ("cel_type_ends_with_list", "self.name.endsWith(self.tags)"),
    ("cel_type_contains_on_map", "self.labels.contains('a')"),
];

/// Rules on a `spec` with formats, an int-or-string, objects, a list of
/// objects, a number and a preserved object ([`rich_spec`]), by label.
const CEL_RICH_TYPE_CASES: &[(&str, &str)] = &[
    (
        "cel_rich_timestamp_ordering_ok",
        "self.when < timestamp('2024-01-01T00:00:00Z')",
    ),
    (
        "cel_rich_timestamp_against_duration_field",
        "self.when < self.ttl",
    ),
    (
        "cel_rich_timestamp_plus_duration_ok",
        "self.when + self.ttl > self.when",
    ),
    ("cel_rich_duration_getter_ok", "self.ttl.getHours() > 1"),
    (
        "cel_rich_timestamp_getter_ok",
        "self.when.getHours('UTC') > 1",
    ),
    ("cel_rich_bytes_size_ok", "self.blob.size() > 0"),
    ("cel_rich_bytes_starts_with", "self.blob.startsWith('a')"),
    (
        "cel_rich_int_or_string_ok",
        "self.port == 80 || self.port == 'http'",
    ),
    ("cel_rich_object_equality_ok", "self.obj == self.obj"),
    ("cel_rich_object_field_ok", "self.obj.a.size() > 0"),
    ("cel_rich_object_size", "self.obj.size() > 0"),
    ("cel_rich_object_global_size", "size(self.obj) > 0"),
    (
        "cel_rich_object_list_field_ok",
        "self.items.all(i, i.a != '')",
    ),
    (
        "cel_rich_object_against_string",
        "self.items.exists(i, i == 'x')",
    ),
    (
        "cel_rich_object_against_map_literal",
        "self.obj == {'a': 'x'}",
    ),
    ("cel_rich_object_against_null", "self.obj != null"),
    ("cel_rich_string_against_null", "self.items[0].a == null"),
    ("cel_rich_number_ordered_against_int_ok", "self.ratio > 1"),
    ("cel_rich_number_equals_int", "self.ratio == 1"),
    ("cel_rich_number_modulo", "self.ratio % 2.0 == 0.0"),
    ("cel_rich_preserved_field_ok", "self.free.anything == 1"),
    ("cel_rich_object_list_index_ok", "self.items[0].a == 'x'"),
    (
        "cel_rich_mapped_field_against_int",
        "self.items.map(i, i.a).exists(a, a == 1)",
    ),
    (
        "cel_rich_conversions_ok",
        "int(self.ratio) > 1 && string(self.ratio) != ''",
    ),
    (
        "cel_rich_year_against_string",
        "self.when.getFullYear() == '2024'",
    ),
    (
        "cel_rich_duration_sum_ok",
        "duration('1h') + duration('1m') > self.ttl",
    ),
    (
        "cel_rich_optional_field_or_value_wrong",
        "self.obj.?a.orValue(1) == 1",
    ),
    (
        "cel_rich_optional_none_ok",
        "optional.none().orValue(1) == 1",
    ),
    (
        "cel_rich_optional_chain_ok",
        "self.?obj.?a.orValue('') == ''",
    ),
    (
        "cel_rich_message_concat_ok",
        "self.obj.a + string(self.ratio) != ''",
    ),
    (
        "cel_rich_exists_one_ok",
        "self.items.exists_one(i, i.a == 'a')",
    ),
    (
        "cel_rich_transform_list_sum_ok",
        "self.items.transformList(i, x, i).sum() >= 0",
    ),
    (
        "cel_rich_transform_list_sum_strings",
        "self.items.transformList(i, x, x.a).sum() >= 0",
    ),
    ("cel_rich_math_greatest", "math.greatest(1, 2) == 2"),
    ("cel_rich_base64", "base64.encode(b'a') != ''"),
    ("cel_rich_string_reverse", "self.obj.a.reverse() == ''"),
    ("cel_rich_list_reverse", "self.items.reverse().size() > 0"),
    ("cel_rich_format_ok", "'%s'.format([self.obj.a]) != ''"),
    ("cel_rich_join_ok", "self.items.map(i, i.a).join() != ''"),
    (
        "cel_rich_url_query_ok",
        "url('https://' + self.obj.a).getQuery().size() >= 0",
    ),
    (
        "cel_rich_cidr_contains_ip_ok",
        "cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))",
    ),
    (
        "cel_rich_ip_equality_ok",
        "ip('10.1.2.3') == ip('10.1.2.3') && ip('10.1.2.3').family() == 4",
    ),
    (
        "cel_rich_quantity_add_int_ok",
        "quantity('1Gi').add(1).isInteger()",
    ),
    (
        "cel_rich_quantity_member_sign",
        "quantity('1Gi').sign() == 1",
    ),
    (
        "cel_rich_quantity_global_sign",
        "sign(quantity('1Gi')) == 1",
    ),
    ("cel_rich_quantity_against_int", "quantity('1Gi') == 1"),
    (
        "cel_rich_list_equals_empty_ok",
        "self.items == [] || self.items.size() > 0",
    ),
    ("cel_rich_map_equals_empty_ok", "self.free == {} || true"),
    (
        "cel_rich_bool_equals_true_ok",
        "self.items.all(i, i.a.size() > 0) == true",
    ),
    ("cel_rich_type_of_string_ok", "type(self.obj.a) == string"),
    (
        "cel_rich_int_ordered_against_uint_ok",
        "self.items.size() > 0u",
    ),
    (
        "cel_rich_filter_map_sum_ok",
        "self.items.filter(i, i.a != '').map(i, i.a.size()).sum() < 100",
    ),
    (
        "cel_rich_map_plus_int",
        "self.items.map(i, i.a + 1).size() > 0",
    ),
    (
        "cel_rich_filter_then_wrong_method",
        "self.items.filter(i, i.a != '').all(i, i.startsWith('a'))",
    ),
    (
        "cel_rich_int_or_string_method_ok",
        "type(self.port) == string ? self.port.startsWith('h') : self.port > 0",
    ),
    (
        "cel_rich_ternary_null_branch_ok",
        "(self.ratio > 1.0 ? null : self.obj) == null",
    ),
    (
        "cel_rich_list_literal_objects_ok",
        "[self.obj, self.obj].size() == 2",
    ),
    (
        "cel_rich_list_literal_object_and_map",
        "[self.obj, {'a': 'x'}].size() == 2",
    ),
    (
        "cel_rich_timestamp_minus_timestamp_ok",
        "self.when - self.when == duration('0s')",
    ),
    ("cel_rich_unknown_function", "self.obj.a.startswith('a')"),
    (
        "cel_rich_optional_first_last_ok",
        "self.items.map(i, i.a).first().orValue('') != 'x' && !self.items.last().hasValue() || true",
    ),
    (
        "cel_rich_optional_unwrap_ok",
        "optional.unwrap([optional.of(1)]).size() == 1 && [optional.of(1)].unwrapOpt().size() == 1",
    ),
    ("cel_rich_undeclared_variable", "other.size() > 1"),
    // A property named like a CEL keyword: escaped, and from a 1.32
    // server's new rules also as written.
    ("cel_rich_keyword_field", "self.obj.namespace != 'x'"),
    (
        "cel_rich_keyword_field_escaped",
        "self.obj.__namespace__ != 'x'",
    ),
    // `existsOne` is a macro from cel-go 0.23 (Kubernetes 1.33); before,
    // only `exists_one` is.
    (
        "cel_rich_exists_one_camel",
        "self.items.existsOne(i, i.a == 'x') || true",
    ),
];

/// A spec with one field of each kind the rich cases need.
fn rich_spec(m: &mut Value) {
    let props = spec_props(m);
    props["when"] = json!({"type": "string", "format": "date-time"});
    props["ttl"] = json!({"type": "string", "format": "duration"});
    props["blob"] = json!({"type": "string", "format": "byte"});
    props["port"] = json!({"x-kubernetes-int-or-string": true});
    props["obj"] = json!({"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 8},
        "namespace": {"type": "string", "maxLength": 8}}});
    props["items"] = json!({"type": "array", "maxItems": 8,
        "items": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 8}}}});
    props["ratio"] = json!({"type": "number"});
    props["free"] = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
}

/// More rules on the `spec` of [`deep_spec`], by label.
const CEL_DEEP_CASES: &[(&str, &str)] = &[
    ("cel_deep_old_self_ok", "oldSelf.size == self.size"),
    (
        "cel_deep_date_format_ok",
        "!has(self.day) || self.day.size() > 0",
    ),
    (
        "cel_deep_date_against_timestamp",
        "self.day < timestamp('2024-01-01T00:00:00Z')",
    ),
    (
        "cel_deep_nested_list_ok",
        "self.grid.all(row, row.all(c, c >= 0))",
    ),
    (
        "cel_deep_nested_list_against_string",
        "self.grid.all(row, row.all(c, c == 'x'))",
    ),
    (
        "cel_deep_map_of_lists_ok",
        "self.groups.all(k, self.groups[k].size() < 5)",
    ),
    (
        "cel_deep_map_of_lists_element_method",
        "self.groups.all(k, self.groups[k].startsWith('a'))",
    ),
    (
        "cel_deep_int_or_string_list_ok",
        "self.ports.all(p, type(p) == int ? p > 0 : p.startsWith('h'))",
    ),
    ("cel_deep_enum_ok", "self.mode in ['a', 'b']"),
    ("cel_deep_enum_against_int", "self.mode == 1"),
    (
        "cel_deep_int32_ok",
        "self.small + 1 > 0 && self.small < 2147483647",
    ),
    (
        "cel_deep_optional_select_ok",
        "self.?obj.a.orValue('') == ''",
    ),
    (
        "cel_deep_optional_index_ok",
        "self.items[?0].a.orValue('') == ''",
    ),
    (
        "cel_deep_optional_map_index_ok",
        "self.groups[?'a'].orValue([]).size() == 0",
    ),
    ("cel_deep_has_on_index", "has(self.groups['a'])"),
    ("cel_deep_in_map_ok", "'a' in self.groups"),
    (
        "cel_deep_embedded_fields_ok",
        "!has(self.template) || self.template.kind != '' && self.template.metadata.name != ''",
    ),
    (
        "cel_deep_embedded_undeclared_field",
        "self.template.spec == 1",
    ),
    (
        "cel_deep_embedded_metadata_labels",
        "self.template.metadata.labels.size() > 0",
    ),
    (
        "cel_deep_string_chain_ok",
        "self.obj.a.lowerAscii().trim().split('.').all(p, p.size() > 0)",
    ),
    (
        "cel_deep_string_chain_wrong",
        "self.obj.a.split('.').lowerAscii() == ''",
    ),
    (
        "cel_deep_ternary_objects_ok",
        "(self.size > 0 ? self.obj : self.obj).a == ''",
    ),
    (
        "cel_deep_ternary_object_and_string",
        "(self.size > 0 ? self.obj : 'x') == 'x'",
    ),
    (
        "cel_deep_exists_on_map_ok",
        "self.groups.exists(k, k == 'a')",
    ),
    (
        "cel_deep_map_key_method_ok",
        "self.groups.all(k, k.matches('^[a-z]+$'))",
    ),
    (
        "cel_deep_list_of_objects_equality_ok",
        "self.items == self.items",
    ),
    (
        "cel_deep_list_of_objects_against_strings",
        "self.items == ['a']",
    ),
    ("cel_deep_duration_literal_ok", "self.ttl < duration('1h')"),
    (
        "cel_deep_bad_duration_literal",
        "self.ttl < duration('1 hour')",
    ),
    (
        "cel_deep_bad_timestamp_literal",
        "self.when < timestamp('yesterday')",
    ),
    ("cel_deep_integer_division_double", "self.ratio / 2 > 1.0"),
    (
        "cel_deep_double_conversion_ok",
        "self.ratio / double(2) > 1.0",
    ),
    ("cel_deep_uint_conversion_ok", "uint(self.size) >= 0u"),
    (
        "cel_deep_bytes_conversion_ok",
        "bytes(self.obj.a).size() >= 0 && string(self.blob) != 'x'",
    ),
    ("cel_deep_bool_conversion_ok", "bool('true')"),
];

/// Rules on the root of [`deep_spec`], by label.
const CEL_DEEP_ROOT_CASES: &[(&str, &str)] = &[
    // Sized from the request before 1.37, 253 bytes from 1.37: matching
    // the name against a pattern costs too much only before.
    (
        "cel_deep_root_metadata_name_matched",
        "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",
    ),
    (
        "cel_deep_root_metadata_name_ok",
        "self.metadata.name.startsWith('a') || true",
    ),
    (
        "cel_deep_root_metadata_name_against_int",
        "self.metadata.name == 1",
    ),
    (
        "cel_deep_root_kind_ok",
        "self.kind == 'Widget' && self.apiVersion != ''",
    ),
    (
        "cel_deep_root_spec_size_ok",
        "!has(self.spec) || !has(self.spec.size) || self.spec.size > 0",
    ),
    ("cel_deep_root_spec_against_string", "self.spec == 'x'"),
];

/// messageExpressions of a rule that holds on the `spec` of [`deep_spec`],
/// by label.
const CEL_DEEP_MESSAGE_EXPRESSION_CASES: &[(&str, &str)] = &[
    (
        "cel_deep_message_expression_ok",
        "'size is ' + string(self.size)",
    ),
    (
        "cel_deep_message_expression_int_plus_string",
        "self.size + 'x'",
    ),
    ("cel_deep_message_expression_undeclared", "'x' + other"),
    ("cel_deep_message_expression_object", "self.obj"),
];

/// Rules on the `spec` of [`base`] for the rule fields, syntax and cost, by
/// label.
const CEL_RULE_CASES: &[(&str, &str)] = &[
    ("cel_optional_syntax_ok", "self.?name.orValue('') != 'x'"),
    ("cel_empty_rule", "  "),
    ("cel_syntax_error", "self.size >"),
    (
        "cel_multiline_without_message",
        "has(self.size) ||\n has(self.name)",
    ),
    ("cel_rule_not_bool", "self.size"),
    ("cel_undefined_field", "self.nope > 1"),
    (
        "cel_undefined_field_in_list_items",
        "self.tags.all(t, t.size() > 0) && self.labels.all(k, k != '') && has(self.nam)",
    ),
    ("cel_wrong_overload", "self.size.startsWith('a')"),
    ("cel_size_of_an_integer", "size(self.size) > 0"),
    ("cel_string_plus_integer", "self.name + self.size == 'a1'"),
    ("cel_string_ordered_against_integer", "self.name < 3"),
    (
        "cel_cross_type_numeric_ordering_ok",
        "self.size < 3.5 && self.size + 1 > 0",
    ),
    (
        "cel_bad_regex_literal",
        "!has(self.name) || self.name.matches('(a')",
    ),
    ("cel_bind", "cel.bind(x, self.size, x > 0)"),
    (
        "cel_two_variable_comprehension",
        "self.tags.all(i, t, t != '' && i >= 0)",
    ),
    // cost
    (
        "cel_cost_quadratic_unbounded",
        "self.tags.all(a, self.tags.exists(b, a == b))",
    ),
    (
        "cel_cost_two_variable_comprehension",
        "self.labels.all(k, v, v.size() < 10 && k != '')",
    ),
];

/// messageExpressions of a rule that holds on the `spec` of [`base`], by
/// label.
const CEL_MESSAGE_EXPRESSION_CASES: &[(&str, &str)] = &[
    ("cel_empty_message_expression", " "),
    ("cel_message_expression_syntax", "'a' +"),
    ("cel_message_expression_not_string", "self.size"),
    (
        "cel_message_expression_undefined_field",
        "'bad ' + self.nope",
    ),
    (
        "cel_message_expression_wrong_overload",
        "'size ' + self.size",
    ),
];

/// Rules on nodes of other kinds (in [`deep_spec`]): a list, a map, a
/// string, an int-or-string, a preserved object, a number, formats, nested
/// lists. (label, property, rule).
const CEL_NODE_CASES: &[(&str, &str, &str)] = &[
    (
        "cel_node_list_ok",
        "tags",
        "self.all(t, t.size() < 5) && self.size() < 9",
    ),
    ("cel_node_list_select", "tags", "self.a == 'x'"),
    ("cel_node_list_against_string", "tags", "self == 'x'"),
    (
        "cel_node_map_ok",
        "labels",
        "self.all(k, self[k] != k) && 'a' in self",
    ),
    ("cel_node_map_against_list", "labels", "self == ['a']"),
    (
        "cel_node_string_ok",
        "name",
        "self.startsWith('a') && self.size() < 9",
    ),
    ("cel_node_string_select", "name", "self.x == 'a'"),
    (
        "cel_node_int_or_string_ok",
        "port",
        "type(self) == string || self > 0",
    ),
    (
        "cel_node_preserved_ok",
        "free",
        "has(self.x) ? self.x == 1 : true",
    ),
    ("cel_node_number_ok", "ratio", "self >= 0.0 && self < 10.5"),
    ("cel_node_number_against_string", "ratio", "self > 'a'"),
    (
        "cel_node_timestamp_ok",
        "when",
        "self > timestamp('2020-01-01T00:00:00Z')",
    ),
    ("cel_node_duration_against_int", "ttl", "self > 5"),
    (
        "cel_node_bytes_ok",
        "blob",
        "self.size() < 100 && string(self) != ''",
    ),
    ("cel_node_enum_ok", "mode", "self == 'a' || self == 'b'"),
    (
        "cel_node_nested_list_ok",
        "grid",
        "self.all(r, r.size() <= 4)",
    ),
    (
        "cel_node_nested_list_wrong",
        "grid",
        "self.all(r, r.startsWith('a'))",
    ),
    (
        "cel_node_map_of_lists_ok",
        "groups",
        "self.all(k, self[k].all(v, v != k))",
    ),
    (
        "cel_node_old_self_list_ok",
        "tags",
        "self.size() >= oldSelf.size()",
    ),
    (
        "cel_node_old_self_string_wrong",
        "name",
        "self.size() >= oldSelf",
    ),
    ("cel_node_matches_dynamic_ok", "name", "self.matches(self)"),
];

/// The fields the deep and node cases use on top of [`rich_spec`].
fn deep_spec(m: &mut Value) {
    rich_spec(m);
    let props = spec_props(m);
    props["day"] = json!({"type": "string", "format": "date"});
    props["grid"] = json!({"type": "array", "maxItems": 4, "items": {"type": "array", "maxItems": 4, "items": {"type": "integer"}}});
    props["groups"] = json!({"type": "object", "maxProperties": 4, "additionalProperties": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 8}}});
    props["ports"] =
        json!({"type": "array", "maxItems": 4, "items": {"x-kubernetes-int-or-string": true}});
    props["mode"] = json!({"type": "string", "enum": ["a", "b"]});
    props["small"] = json!({"type": "integer", "format": "int32"});
    props["template"] = json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true});
}

/// An edit of [`base`] a table's cases start from.
type Prepare = fn(&mut Value);
/// The schema node a table's rules sit on.
type Node = fn(&mut Value) -> &mut Value;
/// The rows of a table of cases: (label, text).
type Table = &'static [(&'static str, &'static str)];

fn cases() -> Vec<(&'static str, Value)> {
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    let mut case = |label: &'static str, edit: &dyn Fn(&mut Value)| {
        let mut m = base();
        edit(&mut m);
        out.push((label, m));
    };
    // metadata
    case("ok", &|_| {});
    for (label, key, value) in [
        ("name_mismatch", "name", json!("widget.example.com")),
        (
            "label_helm_template",
            "labels",
            json!({"app.kubernetes.io/version": "{{ .Chart.AppVersion }}"}),
        ),
        ("label_key_three_parts", "labels", json!({"a/b/c": "x"})),
        (
            "label_value_too_long",
            "labels",
            json!({"a": "x".repeat(64)}),
        ),
        ("annotation_key_bad", "annotations", json!({"-bad-": "x"})),
        (
            "annotation_value_template_ok",
            "annotations",
            json!({"a": "{{ x }}"}),
        ),
    ] {
        case(label, &|m| m["metadata"][key] = value.clone());
    }
    // names and versions
    case("group_no_dot", &|m| {
        m["spec"]["group"] = json!("example");
        m["metadata"]["name"] = json!("widgets.example");
    });
    case("group_upper", &|m| {
        m["spec"]["group"] = json!("Example.com");
        m["metadata"]["name"] = json!("widgets.Example.com");
    });
    case("scope_bad", &|m| m["spec"]["scope"] = json!("Global"));
    case("plural_upper", &|m| {
        m["spec"]["names"]["plural"] = json!("Widgets");
        m["metadata"]["name"] = json!("Widgets.example.com");
    });
    for (label, key, value) in [
        ("singular_bad", "singular", json!("a_b")),
        ("kind_is_list_kind", "listKind", json!("Widget")),
        ("kind_bad", "kind", json!("Wid_get")),
        ("short_name_bad", "shortNames", json!(["w", "Bad"])),
        ("category_bad", "categories", json!(["all", "a.b"])),
    ] {
        case(label, &|m| m["spec"]["names"][key] = value.clone());
    }
    case("version_name_bad", &|m| v0(m)["name"] = json!("V1"));
    case("no_storage_version", &|m| v0(m)["storage"] = json!(false));
    case("two_storage_versions", &|m| {
        second_version(m, json!({"type": "object"}));
        m["spec"]["versions"][1]["storage"] = json!(true);
    });
    case("version_listed_twice", &|m| {
        second_version(m, json!({"type": "object"}));
        m["spec"]["versions"][1]["name"] = json!("v1");
    });
    case("two_versions_ok", &|m| {
        second_version(
            m,
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        )
    });
    case("deprecation_warning_not_deprecated", &|m| {
        v0(m)["deprecationWarning"] = json!("old")
    });
    case("deprecation_warning_too_long", &|m| {
        v0(m)["deprecated"] = json!(true);
        v0(m)["deprecationWarning"] = json!("x".repeat(257));
    });
    case("deprecation_warning_ok", &|m| {
        v0(m)["deprecated"] = json!(true);
        v0(m)["deprecationWarning"] = json!("use v2");
    });
    case("preserve_unknown_fields_true", &|m| {
        m["spec"]["preserveUnknownFields"] = json!(true)
    });
    for (label, approval) in [
        ("protected_group_no_approval", None),
        ("protected_group_unapproved", Some("unapproved, testing")),
        ("protected_group_approval_invalid", Some("yes please")),
    ] {
        case(label, &|m| {
            m["spec"]["group"] = json!("x.k8s.io");
            m["metadata"]["name"] = json!("widgets.x.k8s.io");
            if let Some(approval) = approval {
                m["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": approval});
            }
        });
    }
    // conversion
    for (label, conversion) in [
        (
            "webhook_without_client",
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}),
        ),
        (
            "webhook_without_review_versions",
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}),
        ),
        (
            "webhook_unknown_review_version",
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v9"], "clientConfig": {"url": "https://example.com/c"}}}),
        ),
        (
            "none_with_review_versions",
            json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}}),
        ),
        ("strategy_bad", json!({"strategy": "Magic"})),
        (
            "webhook_ok",
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/convert"}}}}),
        ),
        // A caBundle client-go cannot use: accepted on create, refused by an
        // update of the established CRD from 1.31.
        (
            "webhook_ca_bundle_not_pem",
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"caBundle": "Zm9v", "service": {"name": "s", "namespace": "n"}}}}),
        ),
        (
            "webhook_ca_bundle_ok",
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVV2YzVlpGb2VHeTdOTjVzbGtWK3hOU1RmR3I0d0NnWUlLb1pJemowRUF3SXcKSFRFYk1Ca0dBMVVFQXd3U1kzSmtMWE5oWm1WMGVTMTBaWE4wTFdOaE1DQVhEVEkyTVRFeU5qRXhORE0xTlZvWQpEekl4TWpZeE1UQXlNVEUwTXpVMVdqQWRNUnN3R1FZRFZRUUREQkpqY21RdGMyRm1aWFI1TFhSbGMzUXRZMkV3CldUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqT1BRTUJCd05DQUFURUhQWmhVKzdBQUt3QmtoSlk5SVBOa3pqbWlYVy8KSmxhZlRveDVKNEZCMEpORkpnNTFRb0hVVE55TldTS3p5TTE0VTNBYzZhOWVjSmxvV1FDcnBTdTVvMU13VVRBZApCZ05WSFE0RUZnUVU0QW0zZWl2Mnk1dEE1MjQ3amFyMCt2S2hFall3SHdZRFZSMGpCQmd3Rm9BVTRBbTNlaXYyCnk1dEE1MjQ3amFyMCt2S2hFall3RHdZRFZSMFRBUUgvQkFVd0F3RUIvekFLQmdncWhrak9QUVFEQWdOSUFEQkYKQWlCWGdHVGJaMlJXVExRTVBPcnQwQ2dHUGYrWjVHNk9iaVFCcjVmMnk1eGJRZ0loQU5heThBUmtYM0w5RXEwaAowT3h5YWc2SWdhaTYwY2JWRGUxS0RQckcwQ1FrCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K", "service": {"name": "s", "namespace": "n"}}}}),
        ),
        (
            "webhook_http_url",
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "http://example.com/convert"}}}),
        ),
        (
            "webhook_url_with_query",
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://example.com/c?x=1"}}}),
        ),
        (
            "webhook_service_bad_path",
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "convert"}}}}),
        ),
    ] {
        case(label, &|m| m["spec"]["conversion"] = conversion.clone());
    }
    // structural schema
    case("object_without_type", &|m| {
        spec_schema(m).as_object_mut().map(|o| o.remove("type"));
    });
    case("item_without_type", &|m| {
        spec_props(m)["tags"]["items"] = json!({"minLength": 1})
    });
    case("array_without_items", &|m| {
        spec_props(m)["tags"] = json!({"type": "array"})
    });
    case("root_not_object", &|m| root(m)["type"] = json!("string"));
    case("root_without_type", &|m| {
        root(m).as_object_mut().map(|o| o.remove("type"));
    });
    case("root_nullable", &|m| root(m)["nullable"] = json!(true));
    case("type_null", &|m| {
        spec_props(m)["name"]["type"] = json!("null")
    });
    case("type_unknown", &|m| {
        spec_props(m)["name"]["type"] = json!("str")
    });
    case("junctor_with_type", &|m| {
        spec_props(m)["name"]["anyOf"] = json!([{"type": "string"}, {"maxLength": 3}])
    });
    case("junctor_with_description", &|m| {
        spec_props(m)["name"]["allOf"] = json!([{"description": "x", "maxLength": 3}])
    });
    case("junctor_with_default", &|m| {
        spec_props(m)["name"]["oneOf"] = json!([{"default": "a"}, {"maxLength": 3}])
    });
    case("junctor_with_nullable", &|m| {
        spec_props(m)["name"]["not"] = json!({"nullable": true})
    });
    case("junctor_with_list_type", &|m| {
        spec_props(m)["tags"]["allOf"] = json!([{"x-kubernetes-list-type": "set"}])
    });
    // Refused on 1.30, accepted from 1.31 (the nested form drops it).
    case("junctor_with_additional_properties_false", &|m| {
        spec_props(m)["labels"] =
            json!({"type": "object", "additionalProperties": {"type": "string"}});
        spec_props(m)["labels"]["allOf"] = json!([{"additionalProperties": false}])
    });
    case("junctor_with_additional_properties_true", &|m| {
        spec_props(m)["labels"] =
            json!({"type": "object", "additionalProperties": {"type": "string"}});
        spec_props(m)["labels"]["not"] = json!({"additionalProperties": true})
    });
    case("junctor_value_validations_ok", &|m| {
        spec_props(m)["name"]["anyOf"] = json!([{"maxLength": 2}, {"pattern": "^x"}])
    });
    case("root_junctor_names_unknown_property", &|m| {
        root(m)["anyOf"] = json!([{"properties": {"other": {"maxLength": 2}}}])
    });
    case(
        "root_junctor_names_known_property",
        &|m| root(m)["anyOf"] = json!([{"properties": {"spec": {"required": ["size"]}}}, {"properties": {"spec": {"required": ["name"]}}}]),
    );
    case("nested_junctor_names_unknown_property", &|m| {
        spec_schema(m)["anyOf"] = json!([{"properties": {"other": {"maxLength": 2}}}])
    });
    case(
        "junctor_with_metadata",
        &|m| {
            root(m)["allOf"] = json!([{"properties": {"spec": {"properties": {"metadata": {"maxProperties": 2}}}}}])
        },
    );
    case(
        "metadata_with_labels",
        &|m| {
            root(m)["properties"]["metadata"] =
                json!({"type": "object", "properties": {"labels": {"type": "object"}}})
        },
    );
    case(
        "metadata_name_rules_ok",
        &|m| {
            root(m)["properties"]["metadata"] = json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}})
        },
    );
    case("metadata_with_description", &|m| {
        root(m)["properties"]["metadata"] =
            json!({"type": "object", "description": "standard metadata"})
    });
    case("metadata_not_object", &|m| {
        root(m)["properties"]["metadata"] = json!({"type": "string"})
    });
    case("kind_not_string", &|m| {
        root(m)["properties"]["kind"] = json!({"type": "integer"})
    });
    case(
        "nested_metadata_ok",
        &|m| {
            spec_props(m)["metadata"] =
                json!({"type": "object", "properties": {"x": {"type": "string"}}})
        },
    );
    case("ref", &|m| {
        spec_props(m)["name"]["$ref"] = json!("#/definitions/x")
    });
    case("unique_items", &|m| {
        spec_props(m)["tags"]["uniqueItems"] = json!(true)
    });
    case("items_tuple", &|m| {
        spec_props(m)["tags"]["items"] = json!([{"type": "string"}])
    });
    case("properties_and_additional_properties_false", &|m| {
        spec_schema(m)["additionalProperties"] = json!(false)
    });
    case("properties_and_additional_properties_true", &|m| {
        spec_schema(m)["additionalProperties"] = json!(true)
    });
    case("additional_properties_at_root", &|m| {
        root(m)["additionalProperties"] = json!({"type": "string"});
        root(m).as_object_mut().map(|o| o.remove("properties"));
    });
    case("preserve_unknown_fields_false", &|m| {
        spec_props(m)["name"]["x-kubernetes-preserve-unknown-fields"] = json!(false)
    });
    case("int_or_string_ok", &|m| {
        spec_props(m)["port"] = json!({"x-kubernetes-int-or-string": true})
    });
    case("int_or_string_with_type", &|m| {
        spec_props(m)["port"] = json!({"type": "string", "x-kubernetes-int-or-string": true})
    });
    case(
        "int_or_string_anyof_ok",
        &|m| spec_props(m)["port"] = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}),
    );
    case(
        "int_or_string_and_preserve",
        &|m| spec_props(m)["port"] = json!({"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}),
    );
    case("embedded_on_string", &|m| {
        spec_props(m)["name"]["x-kubernetes-embedded-resource"] = json!(true)
    });
    case(
        "embedded_without_properties",
        &|m| {
            spec_props(m)["tmpl"] =
                json!({"type": "object", "x-kubernetes-embedded-resource": true})
        },
    );
    case(
        "embedded_ok",
        &|m| spec_props(m)["tmpl"] = json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}),
    );
    case(
        "embedded_in_metadata",
        &|m| spec_props(m)["tmpl"] = json!({"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"metadata": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}),
    );
    case("list_map_key_neither_required_nor_default", &|m| {
        spec_props(m)["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "protocol": {"type": "string"}}}})
    });
    case(
        "list_map_key_defaulted_ok",
        &|m| spec_props(m)["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}}),
    );
    case(
        "list_map_key_not_a_property",
        &|m| spec_props(m)["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
    );
    case(
        "list_map_key_object",
        &|m| spec_props(m)["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "object"}}}}),
    );
    case(
        "list_map_without_keys",
        &|m| {
            spec_props(m)["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}})
        },
    );
    case("list_map_of_strings", &|m| {
        spec_props(m)["tags"]["x-kubernetes-list-type"] = json!("map")
    });
    case(
        "list_map_item_nullable",
        &|m| spec_props(m)["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "nullable": true, "required": ["name"], "properties": {"name": {"type": "string"}}}}),
    );
    case(
        "set_of_granular_objects",
        &|m| spec_props(m)["objs"] = json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}),
    );
    case(
        "set_of_atomic_objects_ok",
        &|m| spec_props(m)["objs"] = json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": {"type": "string"}}}}),
    );
    case("set_ok", &|m| {
        spec_props(m)["tags"]["x-kubernetes-list-type"] = json!("set")
    });
    case("list_type_bad", &|m| {
        spec_props(m)["tags"]["x-kubernetes-list-type"] = json!("bag")
    });
    case("list_type_on_string", &|m| {
        spec_props(m)["name"]["x-kubernetes-list-type"] = json!("set")
    });
    case("list_map_keys_without_list_type", &|m| {
        spec_props(m)["tags"]["x-kubernetes-list-map-keys"] = json!(["a"])
    });
    case("map_type_on_string", &|m| {
        spec_props(m)["name"]["x-kubernetes-map-type"] = json!("atomic")
    });
    case("map_type_bad", &|m| {
        spec_props(m)["labels"]["x-kubernetes-map-type"] = json!("mixed")
    });
    case("status_root_with_any_of", &|m| {
        v0(m)["subresources"] = json!({"status": {}});
        root(m)["anyOf"] = json!([{"required": ["spec"]}]);
    });
    case("status_root_with_max_properties", &|m| {
        v0(m)["subresources"] = json!({"status": {}});
        root(m)["maxProperties"] = json!(5);
    });
    case("status_ok", &|m| {
        v0(m)["subresources"] = json!({"status": {}})
    });
    case("decode_max_length_string", &|m| {
        spec_props(m)["name"]["maxLength"] = json!("5")
    });
    case("decode_required_not_list", &|m| {
        spec_schema(m)["required"] = json!("size")
    });
    // defaults
    case("default_ok", &|m| {
        spec_props(m)["size"]["default"] = json!(3)
    });
    case("default_below_minimum", &|m| {
        spec_props(m)["size"]["minimum"] = json!(1);
        spec_props(m)["size"]["default"] = json!(0);
    });
    case("default_wrong_type", &|m| {
        spec_props(m)["size"]["default"] = json!("three")
    });
    case("default_not_in_enum", &|m| {
        spec_props(m)["name"]["enum"] = json!(["a", "b"]);
        spec_props(m)["name"]["default"] = json!("c");
    });
    // From 1.34 defaults meet every format kube-openapi knows; before, a
    // format the server does not know is no constraint.
    case("default_k8s_short_name_ok", &|m| {
        spec_props(m)["name"]["format"] = json!("k8s-short-name");
        spec_props(m)["name"]["default"] = json!("foo-bar");
    });
    case("default_k8s_short_name_bad", &|m| {
        spec_props(m)["name"]["format"] = json!("k8s-short-name");
        spec_props(m)["name"]["default"] = json!("Foo_Bar");
    });
    case("default_k8s_long_name_bad", &|m| {
        spec_props(m)["name"]["format"] = json!("k8s-long-name");
        spec_props(m)["name"]["default"] = json!("foo..bar");
    });
    // From 1.36 `format: int32` bounds a number, defaults included.
    case("default_int32_out_of_range", &|m| {
        spec_props(m)["size"]["format"] = json!("int32");
        spec_props(m)["size"]["default"] = json!(3_000_000_000_u64);
    });
    // A bound outside int32 fails every value from 1.36, defaults too.
    case("default_int32_maximum_out_of_range", &|m| {
        spec_props(m)["size"]["format"] = json!("int32");
        spec_props(m)["size"]["maximum"] = json!(3_000_000_000_u64);
        spec_props(m)["size"]["default"] = json!(5);
    });
    case("default_float_minimum_out_of_range", &|m| {
        spec_props(m)["ratio"] =
            json!({"type": "number", "format": "float", "minimum": -1e39, "default": 0.5});
    });
    case("default_int32_ok", &|m| {
        spec_props(m)["size"]["format"] = json!("int32");
        spec_props(m)["size"]["default"] = json!(2_000_000_000_u64);
    });
    case("default_unknown_field", &|m| {
        spec_schema(m)["default"] = json!({"other": 1})
    });
    case("default_object_ok", &|m| {
        spec_schema(m)["default"] = json!({"size": 1})
    });
    case("default_in_root_metadata", &|m| {
        root(m)["properties"]["metadata"] = json!({"type": "object", "default": {"name": "x"}})
    });
    case("default_breaks_cel", &|m| {
        spec_props(m)["size"]["default"] = json!(0);
        spec_props(m)["size"]["x-kubernetes-validations"] = json!([{"rule": "self > 0"}]);
    });
    case(
        "default_list_map_item_ok",
        &|m| spec_props(m)["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "default": [{"name": "a"}], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}),
    );
    // patterns
    for (label, pattern) in [
        ("pattern_ok", "^[a-z]+(-[a-z]+)*$"),
        ("pattern_unclosed", "^(abc$"),
        ("pattern_lookahead", "^(?=a)"),
        ("pattern_backreference", "(a)\\1"),
        ("pattern_go_repeat_limit", "a{1001}"),
        ("pattern_go_nested_repeat", "a**"),
        ("pattern_go_class_ops_ok", "[a&&b]"),
    ] {
        case(label, &|m| {
            spec_props(m)["name"]["pattern"] = json!(pattern)
        });
    }
    // printer columns and scale: one column (`Size`, `.spec.size`) with one
    // key set
    for (label, key, value) in [
        ("column_ok", "name", "Size"),
        ("column_bad_type", "type", "int"),
        ("column_bad_format", "format", "big"),
        ("column_path_without_dot", "jsonPath", "spec.size"),
        ("column_without_name", "name", ""),
    ] {
        case(label, &|m| {
            let mut column = json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"});
            column[key] = json!(value);
            v0(m)["additionalPrinterColumns"] = json!([column]);
        });
    }
    case(
        "scale_ok",
        &|m| v0(m)["subresources"] = json!({"scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.replicas"}}),
    );
    case(
        "scale_spec_path_outside_spec",
        &|m| v0(m)["subresources"] = json!({"scale": {"specReplicasPath": ".status.replicas", "statusReplicasPath": ".status.replicas"}}),
    );
    case(
        "scale_label_selector_bad",
        &|m| v0(m)["subresources"] = json!({"scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".metadata.labels"}}),
    );
    // selectable fields
    for (label, paths) in [
        ("selectable_ok", vec![".spec.name", ".spec.size"]),
        ("selectable_object", vec![".spec"]),
        ("selectable_unknown_field", vec![".spec.nope"]),
        ("selectable_duplicate", vec![".spec.name", ".spec.name"]),
        ("selectable_array_notation", vec![".spec['name']"]),
    ] {
        case(label, &|m| {
            let fields = paths.iter().map(|p| json!({"jsonPath": p})).collect();
            v0(m)["selectableFields"] = Value::Array(fields);
        });
    }
    case("selectable_metadata", &|m| {
        root(m)["properties"]["metadata"] =
            json!({"type": "object", "properties": {"name": {"type": "string"}}});
        v0(m)["selectableFields"] = json!([{"jsonPath": ".metadata.name"}]);
    });
    case("selectable_too_many", &|m| {
        let mut props = serde_json::Map::new();
        let mut fields = Vec::new();
        for i in 0..9 {
            props.insert(format!("f{i}"), json!({"type": "string"}));
            fields.push(json!({"jsonPath": format!(".spec.f{i}")}));
        }
        spec_schema(m)["properties"] = Value::Object(props);
        v0(m)["selectableFields"] = Value::Array(fields);
    });
    case("selectable_with_non_structural_schema", &|m| {
        spec_props(m)["name"]["$ref"] = json!("#/x");
        v0(m)["selectableFields"] = json!([{"jsonPath": ".spec.size"}]);
    });
    // CEL rule fields and syntax
    case(
        "cel_ok",
        &|m| {
            spec_schema(m)["x-kubernetes-validations"] =
                json!([{"rule": "!has(self.size) || self.size >= 0", "message": "size"}])
        },
    );
    case("cel_message_with_newline", &|m| {
        spec_schema(m)["x-kubernetes-validations"] = json!([{"rule": "true", "message": "a\nb"}])
    });
    case("cel_bad_reason", &|m| {
        spec_schema(m)["x-kubernetes-validations"] = json!([{"rule": "true", "reason": "Nope"}])
    });
    case("cel_field_path_ok", &|m| {
        spec_schema(m)["x-kubernetes-validations"] = json!([{"rule": "true", "fieldPath": ".size"}])
    });
    case("cel_field_path_unknown", &|m| {
        spec_schema(m)["x-kubernetes-validations"] = json!([{"rule": "true", "fieldPath": ".nope"}])
    });
    case("cel_old_self_in_list_items", &|m| {
        spec_props(m)["tags"]["items"]["x-kubernetes-validations"] =
            json!([{"rule": "self == oldSelf"}])
    });
    case("cel_old_self_ok", &|m| {
        spec_props(m)["name"]["x-kubernetes-validations"] =
            json!([{"rule": "self == oldSelf", "message": "immutable"}])
    });
    case("cel_optional_old_self_without_old_self", &|m| {
        spec_props(m)["name"]["x-kubernetes-validations"] =
            json!([{"rule": "self != ''", "optionalOldSelf": true}])
    });
    case("cel_under_junctor", &|m| {
        spec_props(m)["name"]["allOf"] = json!([{"x-kubernetes-validations": [{"rule": "true"}]}])
    });
    // CEL cost: the server's estimator, its limits and its factor.
    case("cel_cost_matches_on_unbounded_list_items", &|m| {
        spec_props(m)["tags"]["items"]["x-kubernetes-validations"] =
            json!([{"rule": "self.matches('^[a-z]+$')"}])
    });
    // cel-go 0.29 (1.37) costs the global form by its arguments: refused
    // there, accepted before.
    case("cel_cost_global_matches_on_unbounded_list_items", &|m| {
        spec_props(m)["tags"]["items"]["x-kubernetes-validations"] =
            json!([{"rule": "matches(self, '^[a-z]+$')"}])
    });
    case("cel_cost_matches_on_bounded_list_items", &|m| {
        spec_props(m)["tags"]["maxItems"] = json!(16);
        spec_props(m)["tags"]["items"]["maxLength"] = json!(63);
        spec_props(m)["tags"]["items"]["x-kubernetes-validations"] =
            json!([{"rule": "self.matches('^[a-z]+$')"}]);
    });
    case("cel_cost_quadratic_bounded", &|m| {
        spec_props(m)["tags"]["maxItems"] = json!(100);
        spec_props(m)["tags"]["items"]["maxLength"] = json!(64);
        spec_schema(m)["x-kubernetes-validations"] =
            json!([{"rule": "self.tags.all(a, self.tags.exists(b, a == b))"}]);
    });
    for (label, max_length) in [
        ("cel_cost_at_the_rule_limit", 12_499_997),
        ("cel_cost_just_over_the_rule_limit", 12_499_998),
        ("cel_cost_twice_the_rule_limit", 25_000_000),
    ] {
        case(label, &|m| {
            spec_props(m)["name"]["maxLength"] = json!(max_length);
            spec_schema(m)["x-kubernetes-validations"] =
                json!([{"rule": "self.name.matches('^[a-z]+$')"}]);
        });
    }
    case("cel_cost_schema_total_over_the_limit", &|m| {
        spec_props(m)["name"]["maxLength"] = json!(2_000_000);
        let mut rules = Vec::new();
        for k in [12, 11, 10, 9, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8] {
            let pattern = "a".repeat(4 * k);
            rules.push(json!({"rule": format!("self.name.matches('{pattern}')")}));
        }
        spec_schema(m)["x-kubernetes-validations"] = json!(rules);
    });
    case("cel_cost_list_items_times_max_items", &|m| {
        spec_props(m)["tags"]["maxItems"] = json!(1000);
        spec_props(m)["tags"]["items"]["maxLength"] = json!(20_000);
        spec_props(m)["tags"]["items"]["x-kubernetes-validations"] =
            json!([{"rule": "self.contains('abc')"}]);
    });
    case("cel_cost_unbounded_map_values", &|m| {
        spec_props(m)["labels"]["additionalProperties"]["x-kubernetes-validations"] =
            json!([{"rule": "self.contains('abc')"}])
    });
    case("cel_cost_cheap_map_values", &|m| {
        spec_props(m)["labels"]["additionalProperties"]["x-kubernetes-validations"] =
            json!([{"rule": "self.startsWith('a')"}])
    });
    case("cel_cost_message_expression_over_budget", &|m| {
        spec_props(m)["tags"]["items"]["x-kubernetes-validations"] =
            json!([{"rule": "self.size() > 0", "messageExpression": "'bad: ' + self"}])
    });
    case("cel_cost_string_functions", &|m| {
        spec_props(m)["name"]["maxLength"] = json!(253);
        spec_props(m)["tags"]["maxItems"] = json!(10);
        spec_props(m)["tags"]["items"]["maxLength"] = json!(63);
        spec_schema(m)["x-kubernetes-validations"] = json!([
            {"rule": "self.name.lowerAscii().split('-').all(p, p.size() < 20)"},
            {"rule": "self.tags.join(',').size() < 500 && self.name.replace('a', 'bb').size() < 600"},
            {"rule": "self.tags.map(t, t + '.x').exists(t, t.endsWith('y.x'))"},
            {"rule": "self.name.find('[0-9]+') == '' || self.tags.filter(t, t in ['a', 'b']).size() == 0"},
            {"rule": "!has(self.size) || self.size in [1, 2, 3] || self.tags.exists_one(t, t == 'x')"},
            {"rule": "isQuantity(self.name) ? quantity(self.name).isLessThan(quantity('1Gi')) : true"},
            {"rule": "self.tags.size() == 0 || self.tags.isSorted() && self.tags.indexOf('a') >= -1"},
            {"rule": "self.?name.orValue('') != 'x' && url('https://' + self.name).getHost() != ''"}
        ]);
    });
    case("cel_escaped_field_ok", &|m| {
        spec_props(m)["foo-bar"] = json!({"type": "string"});
        spec_schema(m)["x-kubernetes-validations"] =
            json!([{"rule": "!has(self.foo__dash__bar) || self.foo__dash__bar != ''"}]);
    });
    case(
        "cel_root_metadata_name_ok",
        &|m| {
            root(m)["x-kubernetes-validations"] =
                json!([{"rule": "self.metadata.name.size() < 20 && self.kind == 'Widget'"}])
        },
    );
    case("cel_root_metadata_labels", &|m| {
        root(m)["x-kubernetes-validations"] = json!([{"rule": "self.metadata.labels.size() < 20"}])
    });
    case("cel_preserved_object_field", &|m| {
        spec_props(m)["extra"] =
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        spec_schema(m)["x-kubernetes-validations"] =
            json!([{"rule": "!has(self.extra) || self.extra.anything == 1"}]);
    });
    case("cel_underscore_fields_ok", &|m| {
        spec_props(m)["foo_bar"] = json!({"type": "string"});
        spec_props(m)["a__b"] = json!({"type": "string"});
        spec_schema(m)["x-kubernetes-validations"] =
            json!([{"rule": "!has(self.foo_bar) || self.foo_bar != self.a__underscores__b"}]);
    });
    case("cel_double_underscore_unescaped", &|m| {
        spec_props(m)["a__b"] = json!({"type": "string"});
        spec_schema(m)["x-kubernetes-validations"] = json!([{"rule": "self.a__b != ''"}]);
    });
    // One CEL rule per case, on `spec` or the root of [`base`] or of a spec
    // with more kinds of fields: the rules the server refuses for their
    // types, and near misses it accepts.
    let rule_tables: [(Prepare, Node, Table); 5] = [
        (|_| {}, spec_schema, CEL_RULE_CASES),
        (|_| {}, spec_schema, CEL_TYPE_CASES),
        (rich_spec, spec_schema, CEL_RICH_TYPE_CASES),
        (deep_spec, spec_schema, CEL_DEEP_CASES),
        (deep_spec, root, CEL_DEEP_ROOT_CASES),
    ];
    for (prepare, node, table) in rule_tables {
        for (label, rule) in table {
            case(label, &|m| {
                prepare(m);
                node(m)["x-kubernetes-validations"] = json!([{"rule": rule}]);
            });
        }
    }
    let message_tables: [(Prepare, Table); 2] = [
        (|_| {}, CEL_MESSAGE_EXPRESSION_CASES),
        (deep_spec, CEL_DEEP_MESSAGE_EXPRESSION_CASES),
    ];
    for (prepare, table) in message_tables {
        for (label, expression) in table {
            case(label, &|m| {
                prepare(m);
                spec_schema(m)["x-kubernetes-validations"] =
                    json!([{"rule": "true", "messageExpression": expression}]);
            });
        }
    }
    for (label, rule) in [
        (
            "cel_deep_optional_old_self_ok",
            "!oldSelf.hasValue() || oldSelf.value().size == self.size",
        ),
        (
            "cel_deep_optional_old_self_as_object",
            "oldSelf.size == self.size",
        ),
    ] {
        case(label, &|m| {
            deep_spec(m);
            spec_schema(m)["x-kubernetes-validations"] =
                json!([{"rule": rule, "optionalOldSelf": true}]);
        });
    }
    for (label, property, rule) in CEL_NODE_CASES {
        case(label, &|m| {
            deep_spec(m);
            spec_props(m)[*property]["x-kubernetes-validations"] = json!([{"rule": rule}]);
        });
    }
    // The CEL parser's own limits (250 operator levels on a path, 250
    // levels of nesting), each side of them: the rules past them never
    // reach a parser here (`cel::depth`).
    let chain = |n: usize| format!("self{} > 0", " + self".repeat(n));
    let nested = |n: usize| format!("{}self{} != []", "[".repeat(n), "]".repeat(n));
    let ternaries = |n: usize| format!("{}self > 1", "self > 0 ? true : ".repeat(n));
    for (label, rule) in [
        ("cel_depth_chain_at_limit_ok", chain(249)),
        ("cel_depth_chain_past_limit", chain(250)),
        ("cel_depth_nesting_at_limit_ok", nested(249)),
        ("cel_depth_nesting_past_limit", nested(250)),
        ("cel_depth_ternaries_at_limit_ok", ternaries(249)),
        ("cel_depth_ternaries_past_limit", ternaries(250)),
        ("cel_depth_far_past_limit", chain(20_000)),
    ] {
        case(label, &|m| {
            deep_spec(m);
            spec_props(m)["small"]["x-kubernetes-validations"] = json!([{"rule": rule}]);
        });
    }
    // one schema per version, and errors per version
    case("second_version_non_structural", &|m| {
        second_version(
            m,
            json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
        )
    });
    out
}

/// The matrix of API servers (`support::envtest::matrix`): 1.30, 1.34 and
/// 1.37 in CI, where CRD validation and the CEL environment differ, each
/// judged offline by its own version's rules.
#[tokio::test]
async fn offline_crd_validation_agrees_with_the_api_server() {
    assert_agrees_on_matrix(cases_agree_on).await;
}

/// Creates every case on `plane` (dry run) and judges it offline, then
/// sends every case named like the base CRD as an update of it (dry run)
/// and judges it offline as an update of the stored CRD: the disagreements.
async fn cases_agree_on(plane: &ControlPlane) -> Vec<String> {
    let client = admin(plane).await;
    let judged = KubeVersion::for_server(plane.kube_minor);
    let known: BTreeSet<&str> = KNOWN_LIMITATIONS.iter().map(|(l, _)| *l).collect();
    let mut disagreements = Vec::new();
    let (mut agreed, mut updates_agreed, mut updates) = (0, 0, 0);
    let all = cases();
    for (label, manifest) in &all {
        let server = server_verdict(&client, manifest).await;
        let ours = validate_crd(manifest, None, judged);
        match judge(label, &known, server, &ours) {
            None => agreed += 1,
            Some(d) => disagreements.push(d),
        }
    }
    // The stored CRD: the base every case edits, really created.
    support::live::install(&client, &base()).await;
    let name = base()["metadata"]["name"].clone();
    let stored = stored_crd(&client, name.as_str().unwrap_or_default()).await;
    for (label, manifest) in all.iter().filter(|(_, m)| m["metadata"]["name"] == name) {
        updates += 1;
        let mut update = manifest.clone();
        update["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
        let server = server_update_verdict(&client, &update).await;
        let ours = validate_crd(manifest, Some(&stored), judged);
        match judge(label, &known, server, &ours) {
            None => updates_agreed += 1,
            Some(d) => disagreements.push(format!("(update) {d}")),
        }
    }
    println!(
        "invalidCrd vs kube-apiserver {}: {agreed}/{} cases agree as creates, {updates_agreed}/{updates} \
as updates of the stored base ({} known limitations)",
        plane.kube_version,
        all.len(),
        KNOWN_LIMITATIONS.len()
    );
    disagreements
}

/// The live CRD `name` as JSON, status included.
async fn stored_crd(client: &Client, name: &str) -> Value {
    let req = http::Request::get(format!(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
    ))
    .body(Vec::new())
    .expect("request");
    let text = client
        .request_text(req)
        .await
        .expect("the stored CRD is read");
    serde_json::from_str(&text).expect("JSON")
}

/// The server's verdict on replacing the stored CRD with `manifest` (dry
/// run): `None` when accepted, its message when refused.
async fn server_update_verdict(client: &Client, manifest: &Value) -> Option<String> {
    let name = manifest["metadata"]["name"].as_str().unwrap_or_default();
    let req = http::Request::put(format!(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}?dryRun=All"
    ));
    verdict(client, req, manifest).await
}

/// Whether our errors agree with the server's verdict on one case: the
/// verdict, every path we name, every cost figure we print. `None` when
/// they agree (or the case is a known limitation), else the disagreement.
fn judge(
    label: &str,
    known: &BTreeSet<&str>,
    server: Option<String>,
    ours: &[crd_safety::crd_validation::FieldError],
) -> Option<String> {
    let verdict_agrees = server.is_some() != ours.is_empty();
    // Every place we point at must be one the server names too (unless
    // the server failed the request without an answer).
    let missing_paths: Vec<String> = match &server {
        Some(msg) if !msg.starts_with("transport error") => ours
            .iter()
            .filter(|e| e.kind != ErrorType::Internal && !e.detail.starts_with("cannot be decoded"))
            .map(|e| e.path.to_string())
            .filter(|p| !msg.contains(p.as_str()))
            .collect(),
        _ => Vec::new(),
    };
    // A cost error must carry the server's own figure.
    let cost_mismatch: Vec<String> = match &server {
        Some(msg) => ours
            .iter()
            .filter(|e| e.detail.contains("exceeds budget"))
            .map(|e| e.detail.clone())
            .filter(|d| !msg.contains(d.as_str()))
            .collect(),
        None => Vec::new(),
    };
    if verdict_agrees && missing_paths.is_empty() && cost_mismatch.is_empty() {
        return known
            .contains(label)
            .then(|| format!("{label}: listed as a known limitation but agrees now"));
    }
    if known.contains(label) {
        return None;
    }
    let ours_text: Vec<String> = ours.iter().map(ToString::to_string).collect();
    Some(format!(
        "{label}: server {:?}\n    ours {ours_text:?}\n    paths the server does not name: {missing_paths:?}\n    cost figures the server does not give: {cost_mismatch:?}",
        server.as_deref().unwrap_or("accepted")
    ))
}

/// Every distinct `apiextensions.k8s.io/v1` CRD of `../shared/corpus`.
fn corpus_crds() -> Option<Vec<(String, Value)>> {
    let dir = support::corpus::corpus_dir()?;
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read corpus dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read corpus file");
        // Legacy v1beta1 CRDs are normalized on reading; the server is sent v1 only.
        if text.contains("apiextensions.k8s.io/v1beta1") {
            continue;
        }
        let mut set = crd_safety::manifest::ManifestSet::default();
        if crd_safety::manifest::load_text(&text, &f.display().to_string(), false, &mut set)
            .is_err()
        {
            continue;
        }
        for c in set.crds {
            let mut m = c.crd.manifest.clone();
            if let Some(o) = m.as_object_mut() {
                o.remove("status");
            }
            let key = serde_json::to_string(&m).unwrap_or_default();
            if seen.insert(key) {
                out.push((c.location.to_string(), m));
            }
        }
    }
    Some(out)
}

#[tokio::test]
async fn every_corpus_crd_gets_the_servers_verdict() {
    let Some(crds) = corpus_crds() else { return };
    assert_agrees_on_matrix(|plane| corpus_agrees_on(plane, &crds)).await;
}

/// Creates every corpus CRD on `plane` (dry run) and judges it offline:
/// the disagreements.
async fn corpus_agrees_on(plane: &ControlPlane, crds: &[(String, Value)]) -> Vec<String> {
    let judged = KubeVersion::for_server(plane.kube_minor);
    let client = admin(plane).await;
    let mut tasks = tokio::task::JoinSet::new();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(4));
    for (i, (location, manifest)) in crds.iter().enumerate() {
        let (client, manifest, gate) = (client.clone(), manifest.clone(), gate.clone());
        let location = location.clone();
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let server = server_verdict(&client, &manifest).await;
            let ours = validate_crd(&manifest, None, judged);
            (i, location, server, ours)
        });
    }
    let (mut refused, mut disagreements) = (0, Vec::new());
    while let Some(joined) = tasks.join_next().await {
        let (_, location, server, ours) = joined.expect("task");
        refused += usize::from(server.is_some());
        if server.is_some() == ours.is_empty() {
            let ours: Vec<String> = ours.iter().map(ToString::to_string).collect();
            disagreements.push(format!(
                "[{}] {location}: server {:?}\n    ours {ours:?}",
                plane.kube_version,
                server.as_deref().unwrap_or("accepted")
            ));
        }
    }
    disagreements.sort();
    println!(
        "corpus on {}: {} distinct v1 CRDs, the server refuses {refused}, {} disagreements",
        plane.kube_version,
        crds.len(),
        disagreements.len()
    );
    disagreements
}
