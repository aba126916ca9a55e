//! Predictions in: the three shapes the SWE-bench harness accepts (a JSON list, a JSON dict keyed
//! by instance_id, JSONL), and `gold` predictions built from the instances' own patches.

use std::collections::HashMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::instance::Instance;
pub use crate::protocol::Prediction;

/// The model name of `--predictions gold`.
pub const GOLD_MODEL_NAME: &str = "gold";

/// A predictions file that cannot be used. Any bad prediction fails the whole file, as in the
/// SWE-bench harness: grading a partial file would silently change the denominator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PredictionsError {
    /// The text is neither a JSON list, a JSON dict nor JSONL.
    #[error("predictions are not valid JSON or JSONL: {0}")]
    Syntax(String),
    /// The file holds no prediction at all (it is blank, `[]` or `{}`): grading it would
    /// report every instance as having no prediction, which is never what was meant.
    #[error("the predictions file holds no prediction")]
    Empty,
    /// One prediction is malformed.
    #[error("prediction {location}: {message}")]
    Invalid {
        /// `[N]` in a list, `"id"` in a dict, `line N` in JSONL.
        location: String,
        /// What is wrong.
        message: String,
    },
}

/// The predictions of a file, one per instance, and the instances it named more than once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadedPredictions {
    /// One prediction per instance, in the order each instance first appears, holding the last
    /// prediction the file gives for it.
    pub predictions: Vec<Prediction>,
    /// Instances with more than one prediction (only the last is kept), in file order.
    pub duplicates: Vec<String>,
}

/// Parses predictions text in any of the three shapes, keeping file order (dict order for a
/// dict). A dict entry whose inner `instance_id` differs from its key is an error; a missing
/// inner id takes the key. An instance named twice keeps its last prediction, as the SWE-bench
/// harness does (SWE-agent appends to `all_preds.jsonl` when an instance is run again); the
/// caller warns about [`LoadedPredictions::duplicates`].
///
/// # Errors
/// The text is not JSON or JSONL, or a prediction lacks `instance_id` or `model_name_or_path` or
/// has a non-string field.
pub fn parse_predictions(text: &str) -> Result<LoadedPredictions, PredictionsError> {
    let trimmed = text.trim();
    let empty_dict = trimmed
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(|inside| inside.trim().is_empty());
    if trimmed.is_empty() || empty_dict {
        return Err(PredictionsError::Empty);
    }
    let predictions = if trimmed.starts_with('[') {
        let values: Vec<Value> = serde_json::from_str(text)
            .map_err(|error| PredictionsError::Syntax(error.to_string()))?;
        values
            .into_iter()
            .enumerate()
            .map(|(index, value)| prediction_from_value(value, None, format!("[{index}]")))
            .collect::<Result<Vec<_>, _>>()?
    } else if let Some(entries) = parse_dict(text) {
        entries
            .0
            .into_iter()
            .map(|(key, value)| {
                let location = format!("{key:?}");
                prediction_from_value(value, Some(key), location)
            })
            .collect::<Result<Vec<_>, _>>()?
    } else {
        parse_jsonl(text)?
    };
    if predictions.is_empty() {
        return Err(PredictionsError::Empty);
    }
    Ok(keep_last(predictions))
}

/// One prediction per instance: the last one, at the place of the first.
fn keep_last(all: Vec<Prediction>) -> LoadedPredictions {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut loaded = LoadedPredictions::default();
    for prediction in all {
        match index.get(&prediction.instance_id) {
            Some(&at) => {
                if !loaded.duplicates.contains(&prediction.instance_id) {
                    loaded.duplicates.push(prediction.instance_id.clone());
                }
                loaded.predictions[at] = prediction;
            }
            None => {
                index.insert(prediction.instance_id.clone(), loaded.predictions.len());
                loaded.predictions.push(prediction);
            }
        }
    }
    loaded
}

/// `--predictions gold`: one prediction per instance from its `patch` (none → empty), with model
/// name [`GOLD_MODEL_NAME`].
pub fn gold_predictions(instances: &[Instance]) -> Vec<Prediction> {
    instances
        .iter()
        .map(|instance| Prediction {
            instance_id: instance.instance_id.clone(),
            model_name_or_path: GOLD_MODEL_NAME.to_owned(),
            model_patch: instance.patch.clone().unwrap_or_default(),
        })
        .collect()
}

/// The whole text as one JSON object whose values are all objects: the dict shape. A single
/// prediction object (one-line JSONL) has string values, so it is not taken as a dict.
fn parse_dict(text: &str) -> Option<OrderedEntries> {
    let entries: OrderedEntries = serde_json::from_str(text).ok()?;
    let all_objects = entries.0.iter().all(|(_, value)| value.is_object());
    (all_objects && !entries.0.is_empty()).then_some(entries)
}

fn parse_jsonl(text: &str) -> Result<Vec<Prediction>, PredictionsError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| {
            let location = format!("line {}", number + 1);
            let value: Value = serde_json::from_str(line)
                .map_err(|error| PredictionsError::Syntax(format!("{location}: {error}")))?;
            prediction_from_value(value, None, location)
        })
        .collect()
}

fn prediction_from_value(
    value: Value,
    key: Option<String>,
    location: String,
) -> Result<Prediction, PredictionsError> {
    let invalid = |message: String| PredictionsError::Invalid {
        location: location.clone(),
        message,
    };
    let Value::Object(mut map) = value else {
        return Err(invalid("expected a JSON object".to_owned()));
    };
    let mut string_field = |field: &str| match map.remove(field) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(String::new())),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(invalid(format!("field {field:?} must be a string"))),
    };
    let inner_id = string_field("instance_id")?.filter(|id| !id.is_empty());
    let model_name_or_path = string_field("model_name_or_path")?
        .filter(|name| !name.is_empty())
        .ok_or_else(|| invalid("field \"model_name_or_path\" is missing".to_owned()))?;
    let model_patch = string_field("model_patch")?.unwrap_or_default();
    let instance_id = match (key, inner_id) {
        (Some(key), Some(inner)) if key != inner => {
            return Err(invalid(format!(
                "key {key:?} and instance_id {inner:?} differ"
            )));
        }
        (_, Some(inner)) => inner,
        (Some(key), None) => key,
        (None, None) => return Err(invalid("field \"instance_id\" is missing".to_owned())),
    };
    Ok(Prediction {
        instance_id,
        model_name_or_path,
        model_patch,
    })
}

/// A JSON object's entries in order, duplicates kept (serde_json's map would keep only the last,
/// hiding a duplicate instance id from the warning).
struct OrderedEntries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for OrderedEntries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = OrderedEntries;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = access.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(OrderedEntries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prediction(id: &str, patch: &str) -> Prediction {
        Prediction {
            instance_id: id.to_owned(),
            model_name_or_path: "openai/gpt".to_owned(),
            model_patch: patch.to_owned(),
        }
    }

    #[test]
    fn a_file_with_no_prediction_is_an_error_in_every_shape() {
        for text in ["", "  \n\n", "[]", " [ ] ", "{}", "{ }\n"] {
            assert_eq!(
                parse_predictions(text),
                Err(PredictionsError::Empty),
                "{text:?}"
            );
        }
        assert_eq!(
            PredictionsError::Empty.to_string(),
            "the predictions file holds no prediction"
        );
    }

    #[test]
    fn a_json_list_loads_in_order_and_a_null_patch_becomes_empty() {
        let text = json!([
            {"instance_id": "b", "model_name_or_path": "openai/gpt", "model_patch": "diff b"},
            {"instance_id": "a", "model_name_or_path": "openai/gpt", "model_patch": null},
        ])
        .to_string();
        assert_eq!(
            parse_predictions(&text).unwrap().predictions,
            vec![prediction("b", "diff b"), prediction("a", "")]
        );
    }

    #[test]
    fn a_dict_keyed_by_instance_id_loads_and_a_missing_inner_id_takes_the_key() {
        let text = r#"{
            "x": {"instance_id": "x", "model_name_or_path": "openai/gpt", "model_patch": "p"},
            "y": {"model_name_or_path": "openai/gpt", "model_patch": ""}
        }"#;
        assert_eq!(
            parse_predictions(text).unwrap().predictions,
            vec![prediction("x", "p"), prediction("y", "")]
        );
    }

    #[test]
    fn jsonl_loads_including_a_single_line_file() {
        let one =
            json!({"instance_id": "a", "model_name_or_path": "openai/gpt", "model_patch": "p"});
        let two = json!({"instance_id": "b", "model_name_or_path": "openai/gpt"});
        assert_eq!(
            parse_predictions(&format!("{one}\n\n{two}\n"))
                .unwrap()
                .predictions,
            vec![prediction("a", "p"), prediction("b", "")]
        );
        assert_eq!(
            parse_predictions(&one.to_string()).unwrap().predictions,
            vec![prediction("a", "p")]
        );
    }

    #[test]
    fn an_instance_named_twice_keeps_its_last_prediction_in_every_shape() {
        let first = r#"{"instance_id": "a", "model_name_or_path": "m", "model_patch": "first"}"#;
        let other = r#"{"instance_id": "b", "model_name_or_path": "m", "model_patch": "b"}"#;
        let last = r#"{"instance_id": "a", "model_name_or_path": "m", "model_patch": "last"}"#;
        let list = format!("[{first}, {other}, {last}, {first}, {last}]");
        let jsonl = format!("{first}\n{other}\n{first}\n{last}\n");
        let dict = format!(r#"{{"a": {first}, "b": {other}, "a": {last}}}"#);
        let expected = LoadedPredictions {
            predictions: vec![
                Prediction {
                    instance_id: "a".to_owned(),
                    model_name_or_path: "m".to_owned(),
                    model_patch: "last".to_owned(),
                },
                Prediction {
                    instance_id: "b".to_owned(),
                    model_name_or_path: "m".to_owned(),
                    model_patch: "b".to_owned(),
                },
            ],
            duplicates: vec!["a".to_owned()],
        };
        for text in [list, jsonl, dict] {
            assert_eq!(parse_predictions(&text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn malformed_predictions_name_their_location() {
        let cases = [
            (
                r#"[{"model_name_or_path": "m"}]"#,
                "prediction [0]: field \"instance_id\" is missing",
            ),
            (
                r#"[{"instance_id": "a"}]"#,
                "prediction [0]: field \"model_name_or_path\" is missing",
            ),
            (
                r#"{"a": {"instance_id": "b", "model_name_or_path": "m"}}"#,
                "prediction \"a\": key \"a\" and instance_id \"b\" differ",
            ),
            (
                "{\"instance_id\": \"a\", \"model_name_or_path\": \"m\", \"model_patch\": 3}",
                "prediction line 1: field \"model_patch\" must be a string",
            ),
            ("[1]", "prediction [0]: expected a JSON object"),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_predictions(text).unwrap_err().to_string(), expected);
        }
    }

    #[test]
    fn text_that_is_not_json_is_a_syntax_error() {
        assert!(matches!(
            parse_predictions("{oops"),
            Err(PredictionsError::Syntax(_))
        ));
    }

    #[test]
    fn gold_predictions_use_the_instance_patches_and_the_gold_model_name() {
        let text = json!([
            {"instance_id": "a", "problem_statement": "", "repo": "o/r", "base_commit": "c", "patch": "diff a"},
            {"instance_id": "b", "problem_statement": "", "repo": "o/r", "base_commit": "c"},
        ])
        .to_string();
        let instances = crate::instance::parse_instances(&text, None)
            .unwrap()
            .instances;
        let gold = |id: &str, patch: &str| Prediction {
            instance_id: id.to_owned(),
            model_name_or_path: "gold".to_owned(),
            model_patch: patch.to_owned(),
        };
        assert_eq!(
            gold_predictions(&instances),
            vec![gold("a", "diff a"), gold("b", "")]
        );
    }
}
