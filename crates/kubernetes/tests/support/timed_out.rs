//! The timed-out execute result, as the original returns it: one assertion for the emulator
//! and real-node tests that run a command past its timeout.

use serde_json::Value;

/// Asserts that `result` is the timed-out result of a command whose first word is `cmd0`,
/// answered by the watchdog after the 5 s exec floor: no exit code, no signal, no stdout, and
/// the original's message (naming the pod and the command's own first word) as stderr.
pub fn assert_timed_out(result: &Value, cmd0: &str) {
    let pod = result["metadata"]["podName"].as_str().unwrap();
    assert_eq!(result["timedOut"], true, "{result}");
    assert_eq!(result["exitCode"], Value::Null, "{result}");
    assert_eq!(result["signal"], Value::Null, "{result}");
    assert_eq!(result["stdout"], "", "{result}");
    assert_eq!(
        result["stderr"],
        format!(
            "execInPod timed out after 5000ms (pod={pod}, container=agent, cmd0={cmd0}). The WebSocket likely dropped before the command produced a status frame."
        )
    );
}
