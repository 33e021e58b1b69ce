//! String-to-string maps taken from input (labels, selectors, env): how they are read from JSON
//! and how they are written back the way the original's object spreads write them.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::config::adapters::StringMap;
use js_compat::json;

/// A [`StringMap`] as the JS object the original builds from it. JS lists array-index keys
/// (`"1"`, `"42"`) ahead of all others, whatever the insertion order, so the map is reordered
/// the same way.
pub fn string_map_object(map: &StringMap) -> Map<String, Value> {
    let object: Map<String, Value> = map
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    json::ordered(object)
}

/// `object[key] = value` on a map that was built from a JS object: an existing key keeps its
/// place, a new key goes last.
pub fn assign(map: &mut StringMap, key: &str, value: String) {
    match map.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value,
        None => map.push((key.to_string(), value)),
    }
}

/// Reads a JSON object of strings into a [`StringMap`], keeping its key order.
pub fn from_json_object(object: &Map<String, Value>) -> Result<StringMap, String> {
    object
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Err(format!("value of {k:?} is not a string: {other}")),
        })
        .collect()
}

/// `#[serde(deserialize_with = "…::deserialize")]` for a required map.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<StringMap, D::Error> {
    let object = Map::<String, Value>::deserialize(deserializer)?;
    from_json_object(&object).map_err(serde::de::Error::custom)
}

/// `#[serde(default, deserialize_with = "…::deserialize_optional")]` for an optional map
/// (`null` reads as absent, as `??` treats it).
pub fn deserialize_optional<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<StringMap>, D::Error> {
    match Option::<Map<String, Value>>::deserialize(deserializer)? {
        Some(object) => from_json_object(&object)
            .map(Some)
            .map_err(serde::de::Error::custom),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn array_index_keys_come_first_like_js() {
        let object = string_map_object(&map(&[("b", "1"), ("7", "2"), ("a", "3")]));
        assert_eq!(
            Value::Object(object).to_string(),
            r#"{"7":"2","b":"1","a":"3"}"#
        );
    }

    #[test]
    fn assignment_keeps_the_position_of_an_existing_key() {
        let mut env = map(&[("A", "1"), ("B", "2")]);
        assign(&mut env, "A", "x".into());
        assign(&mut env, "C", "3".into());
        assert_eq!(env, map(&[("A", "x"), ("B", "2"), ("C", "3")]));
    }

    #[test]
    fn reads_objects_in_order_and_rejects_non_strings() {
        let object = json!({"z": "1", "a": "2"});
        assert_eq!(
            from_json_object(object.as_object().unwrap()).unwrap(),
            map(&[("z", "1"), ("a", "2")])
        );
        assert!(from_json_object(json!({"a": 1}).as_object().unwrap()).is_err());
    }
}
