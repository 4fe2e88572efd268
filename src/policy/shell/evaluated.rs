//! Values bash evaluates as code.
//!
//! Some expansions and builtins take a *value* and evaluate it: an array
//! subscript in a variable name is arithmetic, and arithmetic runs the
//! command substitutions it meets, so `x='a[$(touch m)]'; ls ${!x}` runs
//! `touch m` although no word of the line shows it. The text of such a
//! value comes from a variable, a quoted string or an earlier command, so
//! no rule can read it. This module names the constructs that evaluate a
//! value (indirection, substring offsets, `@` transformations, names given
//! to builtins, arithmetic tests); [`super`] refuses them under an allow
//! rule and counts them as commands nobody can see for deny rules. It does
//! not judge the plain words around them.

use brush_parser::ast::{BinaryPredicate, ExtendedTestExpr, UnaryPredicate};
use brush_parser::word::{Parameter, ParameterExpr};

use super::WordInfo;

/// Why bash evaluates part of the parameter expansion `expr` as code, if
/// it does, and the words nested in it (defaults, patterns), which bash
/// expands in turn and the caller judges like any word.
pub(super) fn parameter(expr: &ParameterExpr) -> (Option<String>, Vec<&str>) {
    use ParameterExpr as P;
    let (parameter, indirect, nested): (&Parameter, bool, Vec<&Option<String>>) = match expr {
        P::Parameter {
            parameter,
            indirect,
        }
        | P::ParameterLength {
            parameter,
            indirect,
        }
        | P::Transform {
            parameter,
            indirect,
            ..
        }
        | P::Substring {
            parameter,
            indirect,
            ..
        } => (parameter, *indirect, Vec::new()),
        P::UseDefaultValues {
            parameter,
            indirect,
            default_value: word,
            ..
        }
        | P::AssignDefaultValues {
            parameter,
            indirect,
            default_value: word,
            ..
        }
        | P::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            error_message: word,
            ..
        }
        | P::UseAlternativeValue {
            parameter,
            indirect,
            alternative_value: word,
            ..
        }
        | P::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            pattern: word,
        }
        | P::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            pattern: word,
        }
        | P::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            pattern: word,
        }
        | P::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            pattern: word,
        }
        | P::UppercaseFirstChar {
            parameter,
            indirect,
            pattern: word,
        }
        | P::UppercasePattern {
            parameter,
            indirect,
            pattern: word,
        }
        | P::LowercaseFirstChar {
            parameter,
            indirect,
            pattern: word,
        }
        | P::LowercasePattern {
            parameter,
            indirect,
            pattern: word,
        } => (parameter, *indirect, vec![word]),
        P::ReplaceSubstring {
            parameter,
            indirect,
            replacement,
            ..
        } => (parameter, *indirect, vec![replacement]),
        // `${!prefix*}` and `${!a[@]}` list names and keys: nothing evaluated.
        P::VariableNames { .. } | P::MemberKeys { .. } => return (None, Vec::new()),
    };
    let mut words: Vec<&str> = nested.into_iter().flatten().map(String::as_str).collect();
    if let P::ReplaceSubstring { pattern, .. } = expr {
        words.push(pattern);
    }
    (why_evaluated(expr, parameter, indirect), words)
}

fn why_evaluated(expr: &ParameterExpr, parameter: &Parameter, indirect: bool) -> Option<String> {
    if indirect {
        return Some(
            "the indirection `${!name}` uses a variable's value as a name, and a name with \
             a subscript (`a[$(…)]`) runs code; name the variable directly"
                .into(),
        );
    }
    if let Parameter::NamedWithIndex { index, .. } = parameter
        && !is_plain_integer(index)
    {
        return Some(format!(
            "the array subscript `[{index}]` is arithmetic, which runs the code a variable \
             holds; use a plain number"
        ));
    }
    match expr {
        ParameterExpr::Substring { offset, length, .. }
            if !is_plain_integer(&offset.value)
                || length.as_ref().is_some_and(|l| !is_plain_integer(&l.value)) =>
        {
            Some(
                "a substring `${name:offset:length}` whose offset or length is not a plain \
                 number is arithmetic, which runs the code a variable holds; use plain numbers"
                    .into(),
            )
        }
        ParameterExpr::Transform { .. } => Some(
            "a transformation `${name@…}` can evaluate the value (`@P` runs the commands in \
             it); use the value as it is"
                .into(),
        ),
        _ => None,
    }
}

/// `12`, ` -3`: a number bash reads without evaluating anything.
fn is_plain_integer(text: &str) -> bool {
    let digits = text.trim();
    let digits = digits.strip_prefix('-').unwrap_or(digits).trim_start();
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// Arithmetic that mentions no variable and no subscript evaluates nothing
/// but numbers: `(( 1 + 2 ))`. Anything else may run what a variable holds.
pub(super) fn arithmetic_is_plain(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*/%<>=!&|^~?:,()".contains(c))
}

/// A `[[ … ]]` test that evaluates a value: arithmetic comparisons
/// (`-eq`, `-lt`, …) and the variable tests `-v`/`-R`, whose operand may
/// carry a subscript.
pub(super) fn test_evaluates(expr: &ExtendedTestExpr) -> bool {
    use BinaryPredicate as B;
    match expr {
        ExtendedTestExpr::And(a, b) | ExtendedTestExpr::Or(a, b) => {
            test_evaluates(a) || test_evaluates(b)
        }
        ExtendedTestExpr::Not(e) | ExtendedTestExpr::Parenthesized(e) => test_evaluates(e),
        ExtendedTestExpr::UnaryTest(predicate, _) => matches!(
            predicate,
            UnaryPredicate::ShellVariableIsSetAndAssigned
                | UnaryPredicate::ShellVariableIsSetAndNameRef
        ),
        ExtendedTestExpr::BinaryTest(predicate, _, _) => matches!(
            predicate,
            B::ArithmeticEqualTo
                | B::ArithmeticNotEqualTo
                | B::ArithmeticLessThan
                | B::ArithmeticLessThanOrEqualTo
                | B::ArithmeticGreaterThan
                | B::ArithmeticGreaterThanOrEqualTo
        ),
    }
}

/// Builtins that take variable names; a name with a subscript
/// (`a[$(touch m)]`) is arithmetic, so it runs code.
const NAME_TAKERS: &[&str] = &[
    "printf",
    "test",
    "[",
    "read",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "let",
    "unset",
    "mapfile",
    "readarray",
    "wait",
    "getopts",
];

/// Why the builtin `program` would evaluate one of its arguments `args`
/// as code, if it would.
pub(super) fn builtin_argument(program: &str, args: &[WordInfo]) -> Option<String> {
    if !NAME_TAKERS.contains(&program) {
        return None;
    }
    let names: Vec<&WordInfo> = match program {
        "let" => {
            return Some(
                "`let` evaluates its arguments as arithmetic, which runs the code a variable \
                 holds; compute the value another way"
                    .into(),
            );
        }
        "printf" => option_values(args, &["-v"]),
        "test" | "[" => option_values(args, &["-v", "-R"]),
        "wait" => option_values(args, &["-p"]),
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            if let Some(flag) = args.iter().find(|w| sets_evaluating_attribute(&w.raw)) {
                return Some(format!(
                    "`{program} {}` makes later assignments evaluate their value (integer or \
                     name reference); assign plain values instead",
                    flag.raw
                ));
            }
            args.iter()
                .filter(|w| !w.raw.starts_with(['-', '+']))
                .collect()
        }
        "mapfile" | "readarray" if args.iter().any(|w| w.raw.starts_with("-C")) => {
            return Some(format!(
                "`{program} -C` runs its callback as code; read the lines another way"
            ));
        }
        _ => args.iter().collect(),
    };
    let name = names.iter().find(|w| {
        let name_part = w.raw.split('=').next().unwrap_or_default();
        name_part.contains('[') || name_part.contains('$') || name_part.contains('`')
    })?;
    Some(format!(
        "`{program}` takes `{}` as a variable name, and a name with a subscript or from an \
         expansion runs code; give a plain name",
        name.raw
    ))
}

/// The words given to any of `options` (`-v NAME` or `-vNAME`).
fn option_values<'w>(args: &'w [WordInfo], options: &[&str]) -> Vec<&'w WordInfo> {
    let mut out = Vec::new();
    for (i, word) in args.iter().enumerate() {
        let value = word.value.as_deref().unwrap_or(&word.raw);
        if options.contains(&value) {
            out.extend(args.get(i + 1));
        } else if options.iter().any(|o| value.starts_with(o)) && !value.starts_with("--") {
            out.push(word);
        }
    }
    out
}

/// `-i` (integer) and `-n` (name reference), alone or among other flags.
fn sets_evaluating_attribute(raw: &str) -> bool {
    raw.strip_prefix('-')
        .is_some_and(|flags| !flags.starts_with('-') && flags.contains(['i', 'n']))
}
