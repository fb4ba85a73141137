//! The Markdown report: sections of tables, growth exponents, and at the end every target with
//! the figure measured against it. Printed as it is written (a long run shows progress) and kept
//! for `--out`.

/// How a figure stands against its target.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Verdict {
    Met,
    Missed,
    /// The issue asks for the figure, not for a value.
    NoTarget,
    /// This run could not measure it (e.g. no browser).
    NotMeasured,
}

impl Verdict {
    /// Met when `ok`; not measured when there was nothing to judge.
    pub fn of(measured: bool, ok: bool) -> Verdict {
        match (measured, ok) {
            (false, _) => Verdict::NotMeasured,
            (true, true) => Verdict::Met,
            (true, false) => Verdict::Missed,
        }
    }
}

/// One target of the issues, with what this run measured.
struct Target {
    what: String,
    figure: String,
    verdict: Verdict,
}

#[derive(Default)]
pub struct Report {
    text: String,
    targets: Vec<Target>,
}

impl Report {
    fn push(&mut self, text: &str) {
        print!("{text}");
        self.text.push_str(text);
    }

    /// A line of prose.
    pub fn line(&mut self, text: &str) {
        self.push(&format!("{text}\n"));
    }

    pub fn section(&mut self, title: &str, what: &str) {
        self.push(&format!("\n### {title}\n\n{what}\n\n"));
    }

    /// A table row; the first row after anything but a row is the header.
    pub fn row(&mut self, cells: &[&str]) {
        let header = !self.text.ends_with("|\n");
        let mut line = format!("| {} |\n", cells.join(" | "));
        if header {
            line.push_str(&format!("|{}\n", "---|".repeat(cells.len())));
        }
        self.push(&line);
    }

    /// The fitted exponent of a cost against size: `what` names both (e.g. "time vs bytes").
    pub fn growth(&mut self, what: &str, k: Option<f64>) {
        let k = k.map_or("n/a".to_string(), |k| format!("{k:.2}"));
        self.push(&format!("\nGrowth ({what}): ∝ size^{k}.\n"));
    }

    /// A target and this run's figure.
    pub fn target(&mut self, what: &str, figure: String, verdict: Verdict) {
        self.targets.push(Target {
            what: what.to_string(),
            figure,
            verdict,
        });
    }

    /// The targets' table, once every benchmark has run.
    pub fn targets(&mut self) {
        if self.targets.is_empty() {
            return;
        }
        self.section(
            "Targets",
            "Each target of the issues beside this run's figure (the sections above give the \
             sizes and references).",
        );
        self.row(&["target", "this run", "met"]);
        for t in std::mem::take(&mut self.targets) {
            let met = match t.verdict {
                Verdict::Met => "yes",
                Verdict::Missed => "**no**",
                Verdict::NoTarget => "(no target)",
                Verdict::NotMeasured => "not measured",
            };
            self.row(&[&t.what, &t.figure, met]);
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }
}

/// The one-minute load average now.
pub fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().next().unwrap_or("?").to_string()
}

/// What the figures were measured on.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem_gb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1e6);
    format!(
        "{cpu}, {cores} cores, {mem_gb:.0} GB RAM; load average {} at the start",
        load_average()
    )
}
