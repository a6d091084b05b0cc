//! `$(VAR)` expansion for command, args and env values
//! (upstream `third_party/forked/golang/expansion/expand.go` and
//! `kubecontainer.ExpandContainerCommandAndArgs`).
//!
//! `$(NAME)` is replaced by the value of `NAME` if any mapping has it, otherwise left
//! verbatim; `$$` escapes a `$`; anything else is copied unchanged.

/// The upstream fallback for an unknown name: the reference itself, `$(name)`.
pub fn syntax_wrap(name: &str) -> String {
    format!("$({name})")
}

/// Expands `$(VAR)` references in `input` (upstream `expansion.Expand`).
pub fn expand(input: &str, mapping: &dyn Fn(&str) -> String) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let (read, is_var, advance) = try_read_variable_name(&input[cursor + 1..]);
            if is_var {
                out.push_str(&mapping(read));
            } else {
                out.push_str(read);
            }
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    out.push_str(&input[checkpoint.min(input.len())..]);
    out
}

/// Returns (text, is-variable-name, bytes consumed after the `$`).
fn try_read_variable_name(input: &str) -> (&str, bool, usize) {
    match input.as_bytes()[0] {
        b'$' => (&input[..1], false, 1),
        b'(' => match input[1..].find(')') {
            Some(end) => (&input[1..=end], true, end + 2),
            None => ("$(", false, 1),
        },
        // An operator that does not start an expression: keep the `$`; the next
        // character is copied as ordinary text.
        _ => ("$", false, 0),
    }
}

/// Expands `command` and `args` of a container against its final environment
/// (upstream `ExpandContainerCommandAndArgs`).
pub fn expand_command_and_args(
    command: &[String],
    args: &[String],
    envs: &[(String, String)],
) -> (Vec<String>, Vec<String>) {
    let lookup = |name: &str| {
        envs.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mapping = |name: &str| lookup(name).unwrap_or_else(|| syntax_wrap(name));
    (
        command.iter().map(|c| expand(c, &mapping)).collect(),
        args.iter().map(|a| expand(a, &mapping)).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(name: &str) -> String {
        match name {
            "VAR_A" => "A".to_string(),
            "VAR_B" => "B".to_string(),
            "VAR_EMPTY" => String::new(),
            other => syntax_wrap(other),
        }
    }

    #[test]
    fn expands_like_upstream() {
        // Cases from upstream expand_test.go.
        let cases = [
            ("$(VAR_A)", "A"),
            ("___$(VAR_B)___", "___B___"),
            ("$(VAR_A)-$(VAR_A)", "A-A"),
            ("$(VAR_EMPTY)", ""),
            ("$(UNKNOWN)", "$(UNKNOWN)"),
            ("$$(VAR_A)", "$(VAR_A)"),
            ("$$$(VAR_A)", "$A"),
            ("$$$$(VAR_A)", "$$(VAR_A)"),
            ("$(VAR_A", "$(VAR_A"),
            ("$VAR_A", "$VAR_A"),
            ("$", "$"),
            ("x$", "x$"),
            ("foo$()bar", "foo$()bar"),
            ("f(VAR_A)", "f(VAR_A)"),
            ("$€", "$€"),
            ("$(VAR_A)$(VAR_B)", "AB"),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, &map), want, "input {input:?}");
        }
    }

    #[test]
    fn command_and_args_use_last_env_value() {
        let envs = vec![
            ("X".to_string(), "1".to_string()),
            ("X".to_string(), "2".to_string()),
        ];
        let (cmd, args) =
            expand_command_and_args(&["echo".into(), "$(X)".into()], &["$(Y)".into()], &envs);
        assert_eq!(cmd, vec!["echo", "2"]);
        assert_eq!(args, vec!["$(Y)"]);
    }
}
