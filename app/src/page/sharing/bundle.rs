//! "Export bundle": one HTML file with the viewer and the analysed run inside, to attach to a
//! ticket. It holds the page's own script and wasm (fetched from this page's origin, inlined,
//! the wasm as base64), its style, and the worker messages that built the views (the file
//! reports, the analysis with its timeline, the theory comparison), which the bundle replays
//! instead of starting a worker. It needs no file and no network: its policy forbids
//! connections altogether. When the page compares two runs, the other run's worker's messages
//! (its files' reports, its timeline cut to the steps viewed) go in too ([`OtherRun`]): the
//! bundle's Compare view shows the comparison and both stacked timelines.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ncclscope_app::page_logic::files::{fetch_blob, js_msg};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The id of the bundle's data element.
const DATA_ID: &str = "ncclscope-bundle";

/// What a bundle carries besides the viewer.
#[derive(Serialize, Deserialize)]
pub struct Bundle {
    /// The file list: (name, size).
    pub files: Vec<(String, u64)>,
    /// Recorded worker messages: JSON and the binary timeline (base64), in arrival order.
    pub messages: Vec<(String, Option<String>)>,
    /// The run the loaded one was compared with, if any (absent from older bundles).
    #[serde(default)]
    pub other: Option<OtherRun>,
}

/// The other run of a comparison, as its worker told it.
#[derive(Serialize, Deserialize)]
pub struct OtherRun {
    pub label: String,
    /// Its file list: (name, size).
    pub files: Vec<(String, u64)>,
    /// The user's order: the loaded run is the baseline.
    pub loaded_is_base: bool,
    /// Its worker's recorded messages, as [`Bundle::messages`].
    pub messages: Vec<(String, Option<String>)>,
}

impl OtherRun {
    pub fn new(
        label: String,
        files: Vec<(String, u64)>,
        loaded_is_base: bool,
        messages: Vec<(String, Option<Vec<u8>>)>,
    ) -> OtherRun {
        OtherRun {
            label,
            files,
            loaded_is_base,
            messages: encoded(messages),
        }
    }

    /// Its messages with their timelines decoded.
    pub fn messages(&self) -> Vec<(String, Option<Vec<u8>>)> {
        decoded(&self.messages)
    }
}

fn encoded(messages: Vec<(String, Option<Vec<u8>>)>) -> Vec<(String, Option<String>)> {
    messages
        .into_iter()
        .map(|(json, t)| (json, t.map(|b| STANDARD.encode(b))))
        .collect()
}

fn decoded(messages: &[(String, Option<String>)]) -> Vec<(String, Option<Vec<u8>>)> {
    messages
        .iter()
        .map(|(json, t)| {
            (
                json.clone(),
                t.as_ref().and_then(|b| STANDARD.decode(b).ok()),
            )
        })
        .collect()
}

impl Bundle {
    /// The messages with their timelines decoded.
    pub fn messages(&self) -> Vec<(String, Option<Vec<u8>>)> {
        decoded(&self.messages)
    }
}

/// The bundle this page was opened from, if it is one.
pub fn embedded() -> Option<Bundle> {
    let text = web_sys::window()?
        .document()?
        .get_element_by_id(DATA_ID)?
        .text_content()?;
    serde_json::from_str(&text).ok()
}

/// `href` of the first element matching `selector`.
fn asset_url(selector: &str) -> Result<String, String> {
    let el = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(selector).ok().flatten())
        .ok_or_else(|| format!("this page has no {selector} to bundle"))?;
    el.get_attribute("href")
        .ok_or_else(|| format!("{selector} has no href"))
}

async fn text_of(url: &str) -> Result<String, String> {
    let blob = fetch_blob(url).await?;
    JsFuture::from(blob.text())
        .await
        .map_err(js_msg)?
        .as_string()
        .ok_or_else(|| format!("{url}: not text"))
}

async fn bytes_of(url: &str) -> Result<Vec<u8>, String> {
    let blob = fetch_blob(url).await?;
    let buffer = JsFuture::from(blob.array_buffer()).await.map_err(js_msg)?;
    Ok(js_sys::Uint8Array::new(&buffer.unchecked_into()).to_vec())
}

/// Text safe inside a `<script>` or `<style>` element: no closing tag can end it early.
fn inert(text: &str) -> String {
    text.replace("</", "<\\/")
}

/// Builds the bundle's HTML from this page's assets, the file list and the recorded messages.
pub async fn build(
    files: Vec<(String, u64)>,
    messages: Vec<(String, Option<Vec<u8>>)>,
    other: Option<OtherRun>,
) -> Result<String, String> {
    let glue = text_of(&asset_url("link[rel=modulepreload]")?).await?;
    let wasm = bytes_of(&asset_url("link[rel=preload][type='application/wasm']")?).await?;
    let css = text_of(&asset_url("link[rel=stylesheet]")?).await?;
    let data = Bundle {
        files,
        messages: encoded(messages),
        other,
    };
    let data = serde_json::to_string(&data).map_err(|e| e.to_string())?;
    Ok(format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'wasm-unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:">
<title>ncclscope bundle</title>
<style>{css}</style>
<script type="application/json" id="{DATA_ID}">{data}</script>
<script type="module">
{glue}
const __ncclscope_wasm = Uint8Array.from(atob("{wasm}"), (c) => c.charCodeAt(0));
await __wbg_init({{ module_or_path: __ncclscope_wasm }});
</script>
</head>
<body></body>
</html>
"#,
        css = inert(&css),
        data = inert(&data),
        glue = inert(&glue),
        wasm = STANDARD.encode(wasm),
    ))
}
