//! A kernel's enriched fields (the exports' columns, figure 4.2 of the thesis) as people read
//! them: bandwidths in the unit their magnitude calls for, efficiencies as percentages, sizes in
//! bytes with a unit, long ids shortened (the whole value in the title). The worker sends the
//! values as the exports write them; links carry them so; only the page rewrites them, here.
//!
//! Two efficiencies exist. The headline one is **bus efficiency**: bus bandwidth (nccl-tests'
//! definition, algorithm bandwidth × the operation's bus factor) over the bottleneck link's
//! bandwidth. The thesis' **algorithm efficiency** (algorithm bandwidth over the bottleneck × its
//! α) is kept, labelled as the thesis', with what makes it differ: on a two-rank ring AllReduce
//! α is ½, so it reads twice the bus efficiency and can pass 100 %.

use crate::protocol::format::{
    human_bytes, human_duration, human_rate, percent, short_id, significant,
};

/// One field as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The field's name as the exports spell it (tests and links key by it).
    pub name: String,
    pub label: String,
    pub text: String,
    /// The whole value, or what the field means, on hover.
    pub title: Option<String>,
}

/// The fields a reader looks for first, in this order: the tooltip shows these only, the
/// details list them first and every other field after.
pub const HEADLINE: [&str; 16] = [
    "Op Count (Hex)",
    "Message Size (Bytes)",
    "Element Count",
    "Data Type",
    "NCCL Algorithm",
    "Protocol",
    "Bus BW (GB/s)",
    "Bus Efficiency",
    "Algo BW (GB/s)",
    "Efficiency",
    "Parallelism Type",
    "Communicator Size",
    "Global Rank",
    "Match",
    "Confidence",
    "Bottleneck",
];

const BUS_EFFICIENCY_TITLE: &str = "Bus bandwidth (nccl-tests' definition: algorithm bandwidth × the operation's bus factor) over the bandwidth of the slowest link between the communicator's GPUs.";
const ALGO_EFFICIENCY_TITLE: &str = "The thesis' efficiency (figure 4.2): algorithm bandwidth over the bottleneck link × the thesis' α for the operation. α undercounts some algorithms (½ on a two-rank ring AllReduce), so it can read twice the bus efficiency and pass 100 %; the bus efficiency is the one to compare.";

/// `name`'s value `raw` as shown.
pub fn readable(name: &str, raw: &str) -> Field {
    let num = raw.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    let field = |label: &str, text: String, title: Option<String>| Field {
        name: name.to_string(),
        label: label.to_string(),
        text,
        title,
    };
    let plain = || field(name, raw.to_string(), None);
    let Some(x) = num else {
        return match name {
            "Communicator ID" | "Communicator Ptr" if raw.chars().count() > 12 => {
                field(name, short_id(raw), Some(raw.to_string()))
            }
            _ => plain(),
        };
    };
    match name {
        "Algo BW (GB/s)" => field("Algo BW", human_rate(x), Some(format!("{raw} GB/s"))),
        "Bus BW (GB/s)" => field("Bus BW", human_rate(x), Some(format!("{raw} GB/s"))),
        "Theoretical Algo BW (GB/s)" => field("Theoretical algo BW", human_rate(x), None),
        "Theoretical Bus BW (GB/s)" => field("Theoretical bus BW", human_rate(x), None),
        "Bottleneck BW (GB/s)" => field("Bottleneck BW", human_rate(x), None),
        "Bus Efficiency" => field(
            "Bus efficiency",
            percent(x),
            Some(BUS_EFFICIENCY_TITLE.into()),
        ),
        "Efficiency" => field(
            "Algo efficiency (thesis)",
            percent(x),
            Some(ALGO_EFFICIENCY_TITLE.into()),
        ),
        "Message Size (Bytes)" => field(
            "Message size",
            human_bytes(x as u64),
            Some(format!("{raw} bytes")),
        ),
        "Confidence" => field(name, format!("{x:.2}"), None),
        "Bus Factor" => field(name, significant(x, 3), None),
        "Duration (ns)" => field("Duration", human_duration(x), None),
        _ => plain(),
    }
}

/// `fields` as shown: the headline ones first in their order, the others after as they came.
pub fn readable_all(fields: &[(String, String)]) -> Vec<Field> {
    let mut out: Vec<Field> = fields.iter().map(|(k, v)| readable(k, v)).collect();
    out.sort_by_key(|f| {
        HEADLINE
            .iter()
            .position(|h| *h == f.name)
            .unwrap_or(HEADLINE.len())
    });
    out
}

/// The headline fields of `fields` only, as shown (the tooltip's).
pub fn headline(fields: &[(String, String)]) -> Vec<Field> {
    readable_all(fields)
        .into_iter()
        .filter(|f| HEADLINE.contains(&f.name.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_floats_become_units_and_percentages() {
        let f = readable("Algo BW (GB/s)", "0.00018757327080890974");
        assert_eq!((f.label.as_str(), f.text.as_str()), ("Algo BW", "188 KB/s"));
        assert_eq!(f.title.as_deref(), Some("0.00018757327080890974 GB/s"));
        assert_eq!(
            readable("Bus BW (GB/s)", "7.50293083235639e-6").text,
            "7.5 KB/s"
        );
        assert_eq!(readable("Bus Efficiency", "0.82").text, "82 %");
        let algo = readable("Efficiency", "1.64");
        assert_eq!(
            (algo.label.as_str(), algo.text.as_str()),
            ("Algo efficiency (thesis)", "164 %")
        );
        assert!(algo
            .title
            .unwrap()
            .contains("bus efficiency is the one to compare"));
        assert_eq!(readable("Message Size (Bytes)", "4194304").text, "4.19 MB");
        assert_eq!(readable("Confidence", "0.973456").text, "0.97");
        // Ids shortened, whole on hover; other text as it is.
        let id = readable("Communicator ID", "0x7f3c2a9b11de9a10");
        assert_eq!(
            (id.text.as_str(), id.title.as_deref()),
            ("0x7f3c…9a10", Some("0x7f3c2a9b11de9a10"))
        );
        assert_eq!(readable("Data Type", "bfloat16").text, "bfloat16");
        assert_eq!(readable("Global Rank", "3").text, "3");
    }

    #[test]
    fn headline_fields_come_first_and_alone_in_the_tooltip() {
        let fields: Vec<(String, String)> = [
            ("CUDA Kernel", "ncclDevKernel"),
            ("Efficiency", "1.6"),
            ("Op Count (Hex)", "0x1f"),
            ("Host", "node01"),
            ("Bus Efficiency", "0.8"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let names = |v: Vec<Field>| v.into_iter().map(|f| f.name).collect::<Vec<_>>();
        assert_eq!(
            names(readable_all(&fields)),
            [
                "Op Count (Hex)",
                "Bus Efficiency",
                "Efficiency",
                "CUDA Kernel",
                "Host"
            ]
        );
        assert_eq!(
            names(headline(&fields)),
            ["Op Count (Hex)", "Bus Efficiency", "Efficiency"]
        );
    }
}
