//! `ValidateCustomResourceDefinitionOpenAPISchema`: the one walk over the schema
//! that checks the OpenAPI restrictions (unsupported keywords, list and map
//! types, `x-kubernetes-validations` fields, CEL) and collects what the later
//! checks need.

use super::*;

#[derive(Clone)]
pub(super) struct State {
    pub(super) allow_defaults: bool,
    /// Shared: every node below carries it.
    pub(super) disallow_reason: Option<std::rc::Rc<str>>,
    pub(super) inside_resource_meta: bool,
    /// The first ancestor whose values cannot be correlated between two
    /// revisions of an object (oldSelf is meaningless below it); shared,
    /// because every node below it carries it.
    pub(super) uncorrelatable: Option<std::rc::Rc<FieldPath>>,
    /// How many values of this node one object can hold (`None`: unbounded).
    pub(super) cardinality: Option<u64>,
}

impl State {
    fn forbid_defaults(&self, reason: String) -> State {
        State {
            allow_defaults: false,
            disallow_reason: Some(reason.into()),
            ..self.clone()
        }
    }

    fn forbid_old_self(&self, path: &FieldPath) -> State {
        if self.uncorrelatable.is_some() {
            return self.clone();
        }
        State {
            uncorrelatable: Some(std::rc::Rc::new(path.clone())),
            ..self.clone()
        }
    }
}

/// Where a node sits, for the checks [`Walker::walk`] does besides its
/// own: its level in the structural tree (`None` off the structural part,
/// or when the invariants are not checked), and its place on the path the
/// defaults walk follows (`properties` and `items` from the root).
#[derive(Clone, Copy)]
pub(super) struct Along {
    pub(super) level: Option<Level>,
    pub(super) defaults: Option<DefaultsAt>,
}

impl Along {
    /// Under a value validation, `definitions`, `dependencies` or a tuple
    /// `items`: none of the structural walks go there.
    const OFF: Along = Along {
        level: None,
        defaults: None,
    };
}

/// A node on the defaults walk's path: whether it is a resource root (an
/// embedded resource, or the root) and whether it lies inside a resource's
/// `metadata`, `apiVersion` or `kind` (defaults there are not pruned).
#[derive(Clone, Copy)]
pub(super) struct DefaultsAt {
    pub(super) resource_root: bool,
    pub(super) inside_meta: bool,
}

/// What one walk found for the checks that run after it.
#[derive(Default)]
pub(super) struct Found<'s> {
    /// The structural invariants broken (unsorted).
    pub(super) structural: Vec<FieldError>,
    /// Every `default` on the defaults walk's path, in the walk's order.
    pub(super) defaults: Vec<defaults::Site<'s>>,
    /// The steps from the root to the node being walked, while it is on
    /// the defaults walk's path.
    pub(super) steps: Vec<defaults::Step<'s>>,
    /// Rules whose fields are valid, to compile once CEL is allowed.
    pub(super) cel: Vec<CelSite<'s>>,
    /// Every node walked decodes and converts ([`Keywords::of_checked`]).
    pub(super) decodes: bool,
}

/// A node whose `x-kubernetes-validations` are compiled if the schema
/// passes the structural and defaults checks.
pub(super) struct CelSite<'s> {
    pub(super) node: &'s Obj,
    pub(super) path: FieldPath,
    pub(super) uncorrelatable: Option<std::rc::Rc<FieldPath>>,
    pub(super) is_root: bool,
    pub(super) cardinality: Option<u64>,
}

pub(super) struct Walker<'a> {
    pub(super) opts: &'a SchemaOptions<'a>,
    /// Rules here are compiled (not under a value validation), if the
    /// schema's structural checks and defaults pass.
    pub(super) cel_here: bool,
    /// The schema converts to a structural one (`fieldPath`s can be resolved).
    pub(super) structural_ok: bool,
}

impl Walker<'_> {
    /// Adds the subtree's schema errors to `errs`, and its structural
    /// errors, defaults and CEL rules to `found` (one set of lists for the
    /// whole walk, not a set per node).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk<'s>(
        &self,
        s: &'s Obj,
        path: &mut FieldPath,
        st: &State,
        is_root: bool,
        along: Along,
        errs: &mut Vec<FieldError>,
        found: &mut Found<'s>,
    ) {
        let kws = Keywords::of_checked(s, &mut found.decodes);
        if let Some(level) = along.level {
            invariants_node(
                &kws,
                level,
                Nested::of(self.opts.kube),
                path,
                &mut found.structural,
            );
        }
        // The defaults walk's view of this node and of its children.
        let defaults_here = along.defaults.map(|at| {
            let embedded = at.resource_root || kws.bool(Kw::EmbeddedResource);
            (embedded, at.inside_meta && !embedded)
        });
        if let Some((_, inside_meta)) = defaults_here
            && let Some(default) = kws.get(Kw::Default).filter(|d| !d.is_null())
        {
            found.defaults.push(defaults::Site {
                node: s,
                default,
                path: path.clone(),
                inside_meta,
                steps: found.steps.clone(),
            });
        }
        let errs_before = errs.len();
        self.standard(&kws, path, st, errs);
        // The children's state: each value of this node holds up to
        // max_elements of them.
        let child_card = st
            .cardinality
            .and_then(|c| crate::cel::env::decl::max_elements(&kws).map(|m| c.saturating_mul(m)));
        let child = &State {
            cardinality: child_card,
            ..st.clone()
        };

        self.map_node(&kws, path, child, along, errs, found);
        self.properties(
            &kws,
            path,
            child,
            is_root,
            along,
            defaults_here,
            found,
            errs,
        );
        // Value validations: no CEL context below them.
        let value_walker = Walker {
            cel_here: false,
            ..*self
        };
        value_walker.value_validations(&kws, path, st, errs, found);
        self.items(&kws, path, child, along, defaults_here, errs, found);
        if let Some(deps) = kws.obj(Kw::Dependencies) {
            for (k, d) in deps {
                if let Some(d) = d.as_object() {
                    value_walker.walk_into(
                        d,
                        &mut path.push().child("dependencies").key(k),
                        st,
                        Along::OFF,
                        errs,
                        found,
                    );
                }
            }
        }
        if let Some(Value::Bool(false)) = kws.get(Kw::PreserveUnknownFields) {
            errs.push(FieldError::invalid(
                path.child("x-kubernetes-preserve-unknown-fields"),
                Value::Bool(false),
                "must be true or undefined",
            ));
        }
        self.map_and_list_types(&kws, path, errs);
        if !kws.arr(Kw::Validations).is_empty() {
            let rule_errs = cel_rules::rule_field_errors(s, path, self.structural_ok);
            errs.extend(rule_errs);
            if errs.len() == errs_before && self.cel_here {
                found.cel.push(CelSite {
                    node: s,
                    path: path.clone(),
                    uncorrelatable: st.uncorrelatable.clone(),
                    is_root,
                    cardinality: st.cardinality,
                });
            }
        }
    }

    /// A map's rules (`additionalProperties` beside `properties`, the
    /// quadratic `uniqueItems`) and the walk into its values' schema.
    fn map_node<'s>(
        &self,
        kws: &Keywords<'s>,
        path: &mut FieldPath,
        child: &State,
        along: Along,
        errs: &mut Vec<FieldError>,
        found: &mut Found<'s>,
    ) {
        if kws.bool(Kw::UniqueItems) {
            errs.push(
                FieldError::forbidden(
                    path.child("uniqueItems"),
                    "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                )
                .with_fix("use x-kubernetes-list-type: set (or map) instead"),
            );
        }
        let ap = kws.additional_properties();
        if !matches!(ap, AdditionalProperties::Absent) {
            if kws.has_properties() && !matches!(ap, AdditionalProperties::Bool(true)) {
                errs.push(
                    FieldError::forbidden(
                        path.child("additionalProperties"),
                        "additionalProperties and properties are mutual exclusive",
                    )
                    .with_fix("a node is either a struct (properties) or a map (additionalProperties), not both"),
                );
            }
            if let AdditionalProperties::Schema(o) = ap {
                let sub = if child.inside_resource_meta {
                    child.forbid_defaults(
                        "inside additionalProperties applying to object metadata".into(),
                    )
                } else {
                    child.clone()
                };
                let along = Along {
                    level: along.level.map(|_| Level::Field),
                    defaults: None,
                };
                self.walk_into(
                    o,
                    &mut path.push().child("additionalProperties"),
                    &sub,
                    along,
                    errs,
                    found,
                );
            }
        }
    }

    /// The walk into each property, with what being a resource's
    /// `metadata`, `kind` or `apiVersion`, or a field of a map that does not
    /// correlate, changes for it.
    #[allow(clippy::too_many_arguments)]
    fn properties<'s>(
        &self,
        kws: &Keywords<'s>,
        path: &mut FieldPath,
        child: &State,
        is_root: bool,
        along: Along,
        defaults_here: Option<(bool, bool)>,
        found: &mut Found<'s>,
        errs: &mut Vec<FieldError>,
    ) {
        let embedded = kws.bool(Kw::EmbeddedResource);
        let map_type = kws.opt_str(Kw::MapType);
        for (i, (name, p)) in kws.properties().enumerate() {
            let mut sub = child.clone();
            // Granular and atomic maps correlate their fields; anything else not.
            if map_type.is_some_and(|m| m != "granular" && m != "atomic") {
                sub = sub.forbid_old_self(path);
            }
            if (is_root || embedded) && matches!(name.as_str(), "metadata" | "kind" | "apiVersion")
            {
                sub.inside_resource_meta = true;
                if is_root {
                    sub = sub.forbid_defaults(format!("in top-level {name}"));
                }
            }
            let at = defaults_here.map(|(embedded, inside_meta)| DefaultsAt {
                resource_root: false,
                inside_meta: inside_meta
                    || (embedded && matches!(name.as_str(), "metadata" | "apiVersion" | "kind")),
            });
            let along = Along {
                level: along.level.map(|_| Level::Field),
                defaults: at,
            };
            if at.is_some() {
                found.steps.push(defaults::Step::Property(name, i));
            }
            self.walk_into(
                p,
                &mut path.push().child("properties").key(name),
                &sub,
                along,
                errs,
                found,
            );
            if at.is_some() {
                found.steps.pop();
            }
        }
    }

    /// The walk into `not`, `allOf`, `oneOf`, `anyOf` and `definitions`,
    /// by a walker with no CEL context (`self` is one).
    fn value_validations<'s>(
        &self,
        kws: &Keywords<'s>,
        path: &mut FieldPath,
        st: &State,
        errs: &mut Vec<FieldError>,
        found: &mut Found<'s>,
    ) {
        if let Some(n) = kws.obj(Kw::Not) {
            self.walk_into(
                n,
                &mut path.push().child("not"),
                st,
                Along::OFF,
                errs,
                found,
            );
        }
        for (kw, key) in [
            (Kw::AllOf, "allOf"),
            (Kw::OneOf, "oneOf"),
            (Kw::AnyOf, "anyOf"),
        ] {
            for (i, b) in kws.arr(kw).iter().enumerate() {
                if let Some(b) = b.as_object() {
                    self.walk_into(
                        b,
                        &mut path.push().child(key).index(i),
                        st,
                        Along::OFF,
                        errs,
                        found,
                    );
                }
            }
        }
        if let Some(defs) = kws.obj(Kw::Definitions) {
            for (k, d) in defs {
                if let Some(d) = d.as_object() {
                    self.walk_into(
                        d,
                        &mut path.push().child("definitions").key(k),
                        st,
                        Along::OFF,
                        errs,
                        found,
                    );
                }
            }
        }
    }

    /// The walk into `items` (one schema, or the tuple form), with
    /// `oldSelf` forbidden below a list that does not correlate its items.
    #[allow(clippy::too_many_arguments)]
    fn items<'s>(
        &self,
        kws: &Keywords<'s>,
        path: &mut FieldPath,
        child: &State,
        along: Along,
        defaults_here: Option<(bool, bool)>,
        errs: &mut Vec<FieldError>,
        found: &mut Found<'s>,
    ) {
        let list_type = kws.opt_str(Kw::ListType);
        if kws.get(Kw::Items).is_some_and(|v| !v.is_null()) {
            let sub = if list_type != Some("map") {
                child.forbid_old_self(path)
            } else {
                child.clone()
            };
            match kws.get(Kw::Items) {
                Some(Value::Object(o)) => {
                    let at = defaults_here.map(|(_, inside_meta)| DefaultsAt {
                        resource_root: false,
                        inside_meta,
                    });
                    let along = Along {
                        level: along.level.map(|_| Level::Item),
                        defaults: at,
                    };
                    if at.is_some() {
                        found.steps.push(defaults::Step::Items);
                    }
                    self.walk_into(o, &mut path.push().child("items"), &sub, along, errs, found);
                    if at.is_some() {
                        found.steps.pop();
                    }
                }
                Some(Value::Array(a)) => {
                    for (i, x) in a.iter().enumerate() {
                        if let Some(o) = x.as_object() {
                            self.walk_into(
                                o,
                                &mut path.push().child("items").index(i),
                                &sub,
                                Along::OFF,
                                errs,
                                found,
                            );
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// [`Walker::walk`] of a child that is not a resource root, adding its
    /// errors to the parent's.
    fn walk_into<'s>(
        &self,
        s: &'s Obj,
        path: &mut FieldPath,
        st: &State,
        along: Along,
        errs: &mut Vec<FieldError>,
        found: &mut Found<'s>,
    ) {
        self.walk(s, path, st, false, along, errs, found);
    }

    /// `specStandardValidatorV3.validate`.
    fn standard(&self, kws: &Keywords, path: &FieldPath, st: &State, errs: &mut Vec<FieldError>) {
        let ty = kws.ty();
        if self.opts.require_valid_property_type && !ty.is_empty() && !OPENAPI_TYPES.contains(&ty) {
            errs.push(FieldError::not_supported(
                path.child("type"),
                Value::from(ty),
                OPENAPI_TYPES,
            ));
        }
        if kws.has(Kw::Default) && !st.allow_defaults {
            let mut detail = "must not be set".to_string();
            if let Some(r) = &st.disallow_reason {
                detail.push(' ');
                detail.push_str(r);
            }
            errs.push(FieldError::forbidden(path.child("default"), detail));
        }
        let unsupported = [
            (Kw::Id, "id", "id is not supported"),
            (
                Kw::AdditionalItems,
                "additionalItems",
                "additionalItems is not supported",
            ),
            (
                Kw::PatternProperties,
                "patternProperties",
                "patternProperties is not supported",
            ),
            (
                Kw::Definitions,
                "definitions",
                "definitions is not supported",
            ),
            (
                Kw::Dependencies,
                "dependencies",
                "dependencies is not supported",
            ),
            (Kw::Ref, "$ref", "$ref is not supported"),
        ];
        for (kw, key, detail) in unsupported {
            let present = match kw {
                Kw::AdditionalItems | Kw::Ref => kws.has(kw),
                _ => kws.get(kw).is_some_and(|v| !is_zero(v)),
            };
            if present {
                errs.push(
                    FieldError::forbidden(path.child(key), detail).with_fix(
                        "CRD schemas must be self-contained: inline the referenced schema",
                    ),
                );
            }
        }
        if ty == "null" {
            errs.push(FieldError::forbidden(
                path.child("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if kws
            .get(Kw::Items)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            errs.push(FieldError::forbidden(
                path.child("items"),
                "items must be a schema object and not an array",
            ));
        }
        if st.inside_resource_meta && kws.bool(Kw::EmbeddedResource) {
            errs.push(FieldError::forbidden(
                path.child("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }

    fn map_and_list_types(&self, kws: &Keywords, path: &FieldPath, errs: &mut Vec<FieldError>) {
        let ty = kws.ty();
        let map_type = kws.opt_str(Kw::MapType);
        let list_type = kws.opt_str(Kw::ListType);
        if map_type.is_some() && ty != "object" {
            errs.push(type_must_be(ty, "object", "x-kubernetes-map-type", path));
        }
        if let Some(m) = map_type
            && m != "atomic"
            && m != "granular"
        {
            errs.push(FieldError::not_supported(
                path.child("x-kubernetes-map-type"),
                Value::from(m),
                &["atomic", "granular"],
            ));
        }
        if list_type.is_some() && ty != "array" {
            errs.push(type_must_be(ty, "array", "x-kubernetes-list-type", path));
        } else if self.opts.require_atomic_set_type
            && list_type == Some("set")
            && let Some(is) = kws.items()
        {
            match type_of(is) {
                "array" => {
                    if let Some(lt) = get(is, "x-kubernetes-list-type").and_then(Value::as_str)
                        && lt != "atomic"
                    {
                        errs.push(FieldError::invalid(
                            path.child("items").child("x-kubernetes-list-type"),
                            Value::from(lt),
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
                "object"
                    if get(is, "x-kubernetes-map-type").and_then(Value::as_str)
                        != Some("atomic") =>
                {
                    errs.push(
                        FieldError::invalid(
                            path.child("items").child("x-kubernetes-map-type"),
                            Value::Null,
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        )
                        .with_fix("set x-kubernetes-map-type: atomic on the items, or use x-kubernetes-list-type: map with keys"),
                    );
                }
                _ => {}
            }
        }
        if let Some(lt) = list_type
            && !matches!(lt, "atomic" | "set" | "map")
        {
            errs.push(FieldError::not_supported(
                path.child("x-kubernetes-list-type"),
                Value::from(lt),
                &["atomic", "set", "map"],
            ));
        }
        let keys = kws.strings(Kw::ListMapKeys);
        if !keys.is_empty() {
            match list_type {
                None => errs.push(FieldError::required(
                    path.child("x-kubernetes-list-type"),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )),
                Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                    path.child("x-kubernetes-list-type"),
                    Value::from(lt),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )),
                _ => {}
            }
        }
        if list_type == Some("map") {
            if keys.is_empty() {
                errs.push(FieldError::required(
                    path.child("x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            match kws.get(Kw::Items) {
                None | Some(Value::Null) => errs.push(FieldError::required(
                    path.child("items"),
                    "must have a schema if x-kubernetes-list-type is map",
                )),
                Some(Value::Array(a)) => errs.push(FieldError::invalid(
                    path.child("items"),
                    Value::Array(a.clone()),
                    "must only have a single schema if x-kubernetes-list-type is map",
                )),
                _ => {}
            }
            if let Some(is) = kws.items() {
                if type_of(is) != "object" {
                    errs.push(FieldError::invalid(
                        path.child("items").child("type"),
                        Value::from(type_of(is)),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let mut seen = std::collections::HashSet::new();
                    for k in &keys {
                        match property(is, k) {
                            Some(p) => {
                                if matches!(type_of(p), "array" | "object") {
                                    errs.push(FieldError::invalid(
                                        path.child("items").child("properties").key(k).child("type"),
                                        Value::from(type_of(is)),
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errs.push(FieldError::invalid(
                                path.child("x-kubernetes-list-map-keys"),
                                Value::from(keys.clone()),
                                "entries must all be names of item properties",
                            )),
                        }
                        if !seen.insert(*k) {
                            errs.push(FieldError::invalid(
                                path.child("x-kubernetes-list-map-keys"),
                                Value::from(keys.clone()),
                                "must not contain duplicate entries",
                            ));
                        }
                    }
                }
            }
        }
        if self.opts.require_map_list_keys_map_set {
            errs.extend(map_list_keys_map_set(kws, path));
        }
    }
}

/// `validateMapListKeysMapSet`: set and map list items are not nullable;
/// map keys are required or defaulted, and not nullable.
pub fn map_list_keys_map_set(kws: &Keywords, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(is) = kws.items() else { return errs };
    let Some(lt) = kws.opt_str(Kw::ListType) else {
        return errs;
    };
    if lt != "set" && lt != "map" {
        return errs;
    }
    if bool_of(is, "nullable") {
        errs.push(FieldError::forbidden(
            path.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required = strings_of(is, "required");
        for k in kws.strings(Kw::ListMapKeys) {
            let Some(p) = property(is, k) else { continue };
            if !required.contains(&k) && !has(p, "default") {
                errs.push(
                    FieldError::required(
                        path.child("items").child("properties").key(k).child("default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    )
                    .with_fix("add the key to the items' required list, or give it a default"),
                );
            }
            if bool_of(p, "nullable") {
                errs.push(FieldError::forbidden(
                    path.child("items")
                        .child("properties")
                        .key(k)
                        .child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}
