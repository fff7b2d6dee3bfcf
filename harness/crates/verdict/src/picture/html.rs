//! The HTML report: one self-contained page (no scripts, no external files) with the
//! picture inline and the run's tables as the human report prints them.

use super::{Panel, Picture};
use crate::topology::Topology;
use crate::verdict::{render, render_before_after, Format};

/// The page style (fonts, figure, tables): shared with the matrix report.
pub const STYLE: &str = "body { font-family: DejaVu Sans, Verdana, Arial, sans-serif; margin: 1.5em; color: #212529; }\n\
figure { margin: 1em 0; overflow-x: auto; }\n\
pre { font-family: DejaVu Sans Mono, Menlo, monospace; font-size: 12px; background: #f8f9fa; padding: 0.8em; overflow-x: auto; }\n";

/// Text for an HTML element or attribute.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The tables of one panel: the human report, or the rig error.
fn section(key: Option<&str>, panel: &Panel<'_>, level: u8) -> String {
    let (title, body) = match panel {
        Panel::Run(v) => {
            let text = render(v, Format::Human).unwrap_or_else(|e| format!("cannot render the report: {e}"));
            (v.run.name.clone(), text)
        }
        Panel::NoGuestData { run, reason } => {
            ((*run).to_owned(), format!("verdict: RIG ERROR ({reason})\nno guest data\n"))
        }
    };
    let title = match key {
        Some(k) => format!("{k}: {title}"),
        None => title,
    };
    format!("<section>\n<h{level}>{}</h{level}>\n<pre>{}</pre>\n</section>\n", escape(&title), escape(&body))
}

/// The tables of a picture's runs as HTML `<section>`s with `<h{level}>` headings: for a
/// before/after pair the side-by-side table first, then each run's human report (or its
/// rig error).
pub fn tables(picture: &Picture<'_>, level: u8) -> String {
    let mut body = String::new();
    if let Picture::BeforeAfter(Panel::Run(b), Panel::Run(a)) = picture {
        body.push_str(&format!(
            "<section>\n<h{level}>Before and after</h{level}>\n<pre>{}</pre>\n</section>\n",
            escape(&render_before_after(b, a))
        ));
    }
    for (key, panel) in picture.panels() {
        body.push_str(&section(key, &panel, level));
    }
    body
}

/// The page around an already rendered SVG picture.
pub(crate) fn page(topo: &Topology, picture: &Picture<'_>, svg: &str) -> String {
    let name = escape(topo.name());
    let description = escape(topo.description().unwrap_or(""));
    let tables = tables(picture, 2);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>manarig: {name}</title>\n\
         <style>\n{STYLE}</style>\n</head>\n<body>\n<h1>manarig: {name}</h1>\n<p>{description}</p>\n<figure>\n{svg}</figure>\n{tables}</body>\n</html>\n"
    )
}
