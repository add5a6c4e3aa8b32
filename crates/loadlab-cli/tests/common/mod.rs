//! Helpers shared by the CLI's test files.

/// Fails with every violation when `value` does not follow `schema/run-result.schema.json`.
pub fn assert_valid(value: &serde_json::Value) {
    let text = include_str!("../../../../schema/run-result.schema.json");
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema is valid");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match the schema: {errors:#?}"
    );
}
