//! The Steps view's state in a share link (`st=`) and a bundle: what the step analysis runs
//! with (θ, the NVTX mapping's edits: [`StepsAsk`]) and what the user picked (a step, a rank).
//!
//! Format: items separated by `*`, each `KEY:VALUE` (values percent-encoded by the link's
//! rules, so neither `*` nor `:` appears raw inside one): `th:0.85` (θ, 0.70–0.90),
//! `s:12` (the step picked), `r:3` (the rank picked), `sp:GLOB` (a step pattern, repeated),
//! `gp:STAGE:GLOB` (a stage pattern, repeated, in order). The value is untrusted:
//! [`decode`] bounds it, refuses an unknown item or a garbled value, and returns plain data.

pub use crate::protocol::insights::StepsAsk;

/// The longest `st=` value accepted.
pub const MAX_STEPS_BYTES: usize = 8 * 1024;
/// At most this many step and stage patterns each.
pub const MAX_PATTERNS: usize = 32;
/// The longest pattern or stage name.
const MAX_PATTERN_BYTES: usize = 256;

/// Everything the user can set in the Steps view.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepsView {
    /// What the analysis runs with.
    pub ask: StepsAsk,
    /// The step picked in the list of steps (its number).
    pub step: Option<u64>,
    /// The rank picked (the outliers and the slack map single it out).
    pub rank: Option<u32>,
}

impl StepsView {
    /// Nothing set: a link leaves `st=` out.
    pub fn is_default(&self) -> bool {
        *self == StepsView::default()
    }
}

/// The `st=` value of `v`.
pub fn encode(v: &StepsView) -> String {
    let mut items = Vec::new();
    if let Some(t) = v.ask.theta {
        items.push(format!("th:{t:.2}"));
    }
    if let Some(s) = v.step {
        items.push(format!("s:{s}"));
    }
    if let Some(r) = v.rank {
        items.push(format!("r:{r}"));
    }
    for p in &v.ask.step_patterns {
        items.push(format!("sp:{}", super::pct::pct(p)));
    }
    for (stage, glob) in &v.ask.stage_patterns {
        items.push(format!(
            "gp:{}:{}",
            super::pct::pct(stage),
            super::pct::pct(glob)
        ));
    }
    items.join("*")
}

/// Reads an `st=` value.
pub fn decode(value: &str) -> Result<StepsView, String> {
    let short = super::pct::shorten;
    if value.len() > MAX_STEPS_BYTES {
        return Err(format!(
            "the steps' state is {} bytes, more than the {MAX_STEPS_BYTES} accepted",
            value.len()
        ));
    }
    let mut v = StepsView::default();
    for item in value.split('*').filter(|i| !i.is_empty()) {
        let (key, rest) = item
            .split_once(':')
            .ok_or_else(|| format!("steps item “{}” is not KEY:VALUE", short(item)))?;
        let bad = |what: &str| format!("steps item “{}”: {what}", short(item));
        match key {
            "th" => {
                let t: f64 = rest.parse().map_err(|_| bad("θ is not a number"))?;
                if !(0.7..=0.9).contains(&t) {
                    return Err(bad("θ is not within 0.70–0.90"));
                }
                v.ask.theta = Some(t);
            }
            "s" => v.step = Some(rest.parse().map_err(|_| bad("not a step number"))?),
            "r" => v.rank = Some(rest.parse().map_err(|_| bad("not a rank"))?),
            "sp" => {
                if v.ask.step_patterns.len() == MAX_PATTERNS {
                    return Err(format!("more than {MAX_PATTERNS} step patterns"));
                }
                v.ask
                    .step_patterns
                    .push(pattern(rest).map_err(|e| bad(&e))?);
            }
            "gp" => {
                if v.ask.stage_patterns.len() == MAX_PATTERNS {
                    return Err(format!("more than {MAX_PATTERNS} stage patterns"));
                }
                let (stage, glob) = rest.split_once(':').ok_or_else(|| bad("not STAGE:GLOB"))?;
                let pair = (pattern(stage), pattern(glob));
                let (Ok(stage), Ok(glob)) = pair else {
                    return Err(bad("not STAGE:GLOB"));
                };
                v.ask.stage_patterns.push((stage, glob));
            }
            _ => return Err(bad("unknown item")),
        }
    }
    Ok(v)
}

/// A percent-encoded pattern or stage name: not empty, bounded, no control characters.
fn pattern(s: &str) -> Result<String, String> {
    let p = super::pct::unpct(s, MAX_PATTERN_BYTES)?;
    if p.trim().is_empty() || p.chars().any(char::is_control) {
        return Err("an empty name or one with control characters".into());
    }
    Ok(p)
}

/// Reads the Steps view's stage-pattern box: one `STAGE=GLOB` per line (blank lines skipped),
/// as `--stage-pattern` reads them. Errors name the first bad line.
pub fn parse_stage_patterns(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let pair = line
            .split_once('=')
            .map(|(s, g)| (s.trim(), g.trim()))
            .filter(|(s, g)| !s.is_empty() && !g.is_empty());
        let Some((stage, glob)) = pair else {
            return Err(format!("line {}: expected STAGE=GLOB", n + 1));
        };
        if out.len() == MAX_PATTERNS {
            return Err(format!("more than {MAX_PATTERNS} stage patterns"));
        }
        out.push((stage.to_string(), glob.to_string()));
    }
    Ok(out)
}

/// Reads the step-pattern box: globs separated by commas or new lines.
pub fn parse_step_patterns(text: &str) -> Result<Vec<String>, String> {
    let v: Vec<String> = text
        .split([',', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    if v.len() > MAX_PATTERNS {
        return Err(format!("more than {MAX_PATTERNS} step patterns"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> StepsView {
        StepsView {
            ask: StepsAsk {
                theta: Some(0.85),
                step_patterns: vec!["ProfilerStep#*".into(), "my step * & more".into()],
                stage_patterns: vec![
                    ("forward".into(), "fwd*".into()),
                    ("data:load".into(), "*loader*:x".into()),
                ],
            },
            step: Some(12),
            rank: Some(3),
        }
    }

    #[test]
    fn round_trips_every_setting() {
        let v = full();
        let text = encode(&v);
        assert!(!text.contains('&') && !text.contains('#'), "{text}");
        assert_eq!(decode(&text).unwrap(), v);
        assert_eq!(
            decode(&encode(&StepsView::default())).unwrap(),
            StepsView::default()
        );
        assert!(StepsView::default().is_default() && !v.is_default());
    }

    #[test]
    fn hostile_values_are_errors_not_panics() {
        let many = "sp:a*".repeat(MAX_PATTERNS + 1);
        let long = format!("sp:{}", "a".repeat(MAX_STEPS_BYTES));
        let cases = [
            "th:0.5",
            "th:0.95",
            "th:NaN",
            "th:x",
            "s:-1",
            "s:1e3",
            "r:x",
            "r:99999999999",
            "zz:1",
            "nocolon",
            "sp:",
            "sp:%ZZ",
            "sp:%0A",
            "gp:forward",
            "gp::fwd",
            "gp:forward:",
            many.as_str(),
            long.as_str(),
        ];
        for c in cases {
            assert!(decode(c).is_err(), "{c:.60}");
        }
        // Markup stays text.
        let v = decode("sp:%3Cimg%20src%3Dx%3E").unwrap();
        assert_eq!(v.ask.step_patterns, ["<img src=x>"]);
    }

    #[test]
    fn the_boxes_read_as_the_command_reads_its_flags() {
        let g = parse_stage_patterns("forward = fwd*\n\n backward=bwd*\n").unwrap();
        assert_eq!(
            g,
            [
                ("forward".to_string(), "fwd*".to_string()),
                ("backward".to_string(), "bwd*".to_string())
            ]
        );
        assert_eq!(
            parse_stage_patterns("forward=fwd*\nnonsense").unwrap_err(),
            "line 2: expected STAGE=GLOB"
        );
        assert_eq!(parse_step_patterns("a*, b*\nc").unwrap(), ["a*", "b*", "c"]);
        // The options: θ set, the step list replaced, the stage patterns tried first.
        let opts = full().ask.options();
        assert_eq!(opts.settings.theta, 0.85);
        assert_eq!(opts.mapping.steps, ["ProfilerStep#*", "my step * & more"]);
        assert_eq!(opts.mapping.stages[0].stage, "forward");
        assert_eq!(opts.mapping.stages[1].pattern, "*loader*:x");
        let default = StepsAsk::default().options();
        assert_eq!(default, analyses::steps::StepOptions::default());
    }
}
