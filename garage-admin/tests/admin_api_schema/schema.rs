//! A small reader of the OpenAPI document: component lookup, property sets, example values
//! and a checker for serialized requests; and a recorder of the fields a DTO declares.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::{Map, Value, json};

pub struct Schema {
    doc: Value,
}

impl Schema {
    pub fn load() -> Self {
        let text = garage_fixture::admin_api_schema().unwrap_or_else(|e| panic!("{e}"));
        let doc: Value = serde_json::from_str(&text).expect("admin-api-schema prints JSON");
        Self { doc }
    }

    pub fn component(&self, name: &str) -> &Value {
        self.doc["components"]["schemas"]
            .get(name)
            .unwrap_or_else(|| panic!("schema has no component {name}"))
    }

    fn resolve<'a>(&'a self, mut s: &'a Value) -> &'a Value {
        while let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.trim_start_matches("#/components/schemas/");
            s = self.component(name);
        }
        s
    }

    /// Properties of an object schema, through `$ref`, `allOf` (merged) and `oneOf` (union).
    pub fn properties(&self, s: &Value) -> BTreeMap<String, Value> {
        let s = self.resolve(s);
        let mut out = BTreeMap::new();
        if let Some(p) = s.get("properties").and_then(Value::as_object) {
            out.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for key in ["allOf", "oneOf"] {
            for sub in s.get(key).and_then(Value::as_array).into_iter().flatten() {
                out.extend(self.properties(sub));
            }
        }
        out
    }

    /// Required properties, through `$ref` and `allOf`.
    fn required(&self, s: &Value) -> Vec<String> {
        let s = self.resolve(s);
        let mut out: Vec<String> = s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        for sub in s
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(self.required(sub));
        }
        out
    }

    /// A value of schema `s` with every property present.
    pub fn example(&self, s: &Value, stack: &mut Vec<String>) -> Value {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.trim_start_matches("#/components/schemas/").to_string();
            // A self-referencing component (`lifecycle.Filter`) stops at its first repeat.
            if stack.contains(&name) {
                return Value::Null;
            }
            stack.push(name.clone());
            let v = self.example(self.component(&name), stack);
            stack.pop();
            return v;
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            let mut merged = Map::new();
            for sub in all {
                if let Value::Object(o) = self.example(sub, stack) {
                    merged.extend(o);
                }
            }
            return Value::Object(merged);
        }
        if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
            let first = one
                .iter()
                .find(|v| v.get("type") != Some(&json!("null")))
                .unwrap_or(&Value::Null);
            return self.example(first, stack);
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array) {
            return e[0].clone();
        }
        if s.get("default") == Some(&Value::Null) && s.get("type").is_none() {
            return Value::Null;
        }
        let ty = match s.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("null")
                .to_string(),
            _ if s.get("properties").is_some() => "object".into(),
            // `{}`: Garage's XML values (`ID`, `Status`, `Prefix`, `Date`) are strings.
            _ => "string".into(),
        };
        match ty.as_str() {
            "object" => {
                let mut o = Map::new();
                for (k, v) in self.properties(s) {
                    o.insert(k, self.example(&v, stack));
                }
                if let Some(ap) = s.get("additionalProperties").filter(|v| v.is_object()) {
                    o.insert(NODE.into(), self.example(ap, stack));
                }
                Value::Object(o)
            }
            "array" => {
                let items = s.get("items").cloned().unwrap_or(json!({}));
                json!([self.example(&items, stack)])
            }
            "integer" => json!(1),
            "number" => json!(0.5),
            "boolean" => json!(true),
            "null" => Value::Null,
            _ => json!(NODE),
        }
    }

    /// Checks a serialized request against schema `s`; returns the problems found.
    pub fn check_json(&self, path: &str, v: &Value, s: &Value) -> Vec<String> {
        let s = self.resolve(s);
        if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
            let results: Vec<Vec<String>> = one
                .iter()
                .map(|sub| self.check_json(path, v, sub))
                .collect();
            return if results.iter().any(Vec::is_empty) {
                vec![]
            } else {
                vec![format!("{path}: matches no oneOf variant: {results:?}")]
            };
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            if let Value::Object(o) = v {
                let props = self.properties(s);
                let missing = self
                    .required(s)
                    .into_iter()
                    .filter(|r| !o.contains_key(r))
                    .map(|r| format!("{path}.{r}: required but not sent"));
                return missing
                    .chain(o.iter().flat_map(|(k, val)| match props.get(k) {
                        Some(p) => self.check_json(&format!("{path}.{k}"), val, p),
                        None => vec![format!("{path}.{k}: not in the schema")],
                    }))
                    .collect();
            }
            return all
                .iter()
                .flat_map(|sub| self.check_json(path, v, sub))
                .collect();
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array) {
            return if e.contains(v) {
                vec![]
            } else {
                vec![format!("{path}: {v} not in {e:?}")]
            };
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if s.get("properties").is_some() => vec!["object"],
            _ => return vec![],
        };
        let actual = match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let ok = types.contains(&actual) || (actual == "integer" && types.contains(&"number"));
        if !ok {
            return vec![format!("{path}: {actual} where the schema says {types:?}")];
        }
        match v {
            Value::Object(o) => {
                let props = self.properties(s);
                let extra = s.get("additionalProperties").filter(|a| a.is_object());
                let missing = self
                    .required(s)
                    .into_iter()
                    .filter(|r| !o.contains_key(r))
                    .map(|r| format!("{path}.{r}: required but not sent"));
                missing
                    .chain(o.iter().flat_map(|(k, val)| match (props.get(k), extra) {
                        (Some(p), _) | (None, Some(p)) => {
                            self.check_json(&format!("{path}.{k}"), val, p)
                        }
                        (None, None) => vec![format!("{path}.{k}: not in the schema")],
                    }))
                    .collect()
            }
            Value::Array(items) => {
                let item_schema = s.get("items").cloned().unwrap_or(json!({}));
                items
                    .iter()
                    .enumerate()
                    .flat_map(|(i, it)| self.check_json(&format!("{path}[{i}]"), it, &item_schema))
                    .collect()
            }
            _ => vec![],
        }
    }
}

pub const NODE: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Field names a `#[derive(Deserialize)]` struct declares, read from what it passes to
/// `deserialize_struct`.
pub fn declared_fields<T: for<'de> Deserialize<'de>>() -> (&'static str, &'static [&'static str]) {
    let mut seen = None;
    let _ = T::deserialize(FieldRecorder(&mut seen));
    seen.expect("not a plain struct")
}

struct FieldRecorder<'a>(&'a mut Option<(&'static str, &'static [&'static str])>);

impl<'de> Deserializer<'de> for FieldRecorder<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only structs are recorded"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some((name, fields));
        Err(de::Error::custom("recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}
