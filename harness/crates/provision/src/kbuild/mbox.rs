//! Patch series from an mbox: `git format-patch --stdout`, `b4 am` (folded subjects,
//! collected trailers), a lore thread with a `[PATCH 0/N]` cover letter and replies.
//!
//! Rules:
//! - a message starts at an mbox `From ` separator line (`From <id> <weekday> <month>
//!   <day> <hh:mm:ss> <year>`, as git and b4 write it), at the start of the file or
//!   after a blank line; a `From ` line of a commit message is not one;
//! - headers are unfolded (a line starting with a blank continues the previous one),
//!   so a long subject b4 wrapped is one subject;
//! - a body in `quoted-printable` or `base64` (raw messages from a list archive) is
//!   decoded, so GNU `patch` sees the diff the author sent;
//! - kept: messages with a diff (`diff --git`, or `--- `/`+++ ` then `@@ `); skipped:
//!   cover letters (`[PATCH … 0/N]`), replies (`Re:`) and anything without a diff;
//! - order: the file's, unless every kept patch is numbered `M/N` with distinct `M`,
//!   then by `M` (a thread mbox is in arrival order);
//! - names: `<file>#<k> <subject>` (k = position in the series, from 1); trailers
//!   (`Reviewed-by:`, `Link:`) stay in the text, which `patch` skips.

/// Whether `line` is an mbox `From ` separator (`From git@z Thu Jan  1 00:00:00 1970`,
/// `From 9f3c… Mon Sep 17 00:00:00 2001`): an id, then a date ending in a time and a
/// four-digit year.
pub fn is_separator(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("From ") else { return false };
    let words: Vec<&str> = rest.split_whitespace().collect();
    let year = words.last().is_some_and(|y| y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit()));
    let time = words.iter().any(|w| {
        let parts: Vec<&str> = w.split(':').collect();
        parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    });
    words.len() >= 3 && year && time
}

/// `[PATCH v2 0/4]`, `[RFC PATCH net-next 00/12]`: a cover letter.
pub fn is_cover_letter(subject: &str) -> bool {
    numbering(subject).is_some_and(|(m, _)| m == 0)
}

/// `(M, N)` of the first `[…]` group that has an `M/N` word.
pub fn numbering(subject: &str) -> Option<(u32, u32)> {
    let inside = subject.strip_prefix('[').or_else(|| subject.find('[').map(|i| &subject[i + 1..]))?;
    let group = inside.split(']').next()?;
    group.split_whitespace().find_map(|w| {
        let (m, n) = w.split_once('/')?;
        Some((m.parse().ok()?, n.parse().ok()?))
    })
}

/// Whether the text holds a unified diff.
pub fn has_diff(text: &str) -> bool {
    let mut saw_header = false;
    for line in text.lines() {
        if line.starts_with("diff --git ") {
            return true;
        }
        if line.starts_with("+++ ") {
            saw_header = true;
        } else if saw_header && line.starts_with("@@ ") {
            return true;
        }
    }
    false
}

/// The messages of an mbox, each as its lines (separator included).
fn messages(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut prev_blank = true;
    for line in text.split_inclusive('\n') {
        if out.is_empty() || prev_blank && is_separator(line.trim_end_matches(['\n', '\r'])) {
            out.push(String::new());
        }
        if let Some(m) = out.last_mut() {
            m.push_str(line);
        }
        prev_blank = line.trim().is_empty();
    }
    out
}

/// Unfolded headers (name, value) and the body of one message.
fn parse(message: &str) -> (Vec<(String, String)>, &str) {
    let (head, body) = match message.find("\n\n") {
        Some(i) => (&message[..i], &message[i + 2..]),
        None => (message, ""),
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in head.lines().filter(|l| !is_separator(l)) {
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = headers.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
        } else if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    (headers, body)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// Quoted-printable (RFC 2045 6.7): `=XX` bytes and `=` soft line breaks.
fn quoted_printable(body: &str) -> String {
    let mut out = Vec::with_capacity(body.len());
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'=' if bytes.get(i + 1) == Some(&b'\n') => i += 2,
            b'=' if bytes.get(i + 1..i + 3) == Some(b"\r\n") => i += 3,
            b'=' => match bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => {
                    out.push(b'=');
                    i += 1;
                }
            },
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Base64 (RFC 4648), whitespace ignored; `None` for a character outside the alphabet.
fn base64(body: &str) -> Option<String> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in body.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        acc = (acc << 6) | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The message with its body decoded when it is quoted-printable or base64.
fn decoded(message: &str, headers: &[(String, String)], body: &str) -> String {
    let encoding = header(headers, "content-transfer-encoding").map(str::to_ascii_lowercase);
    let plain = match encoding.as_deref() {
        Some("quoted-printable") => quoted_printable(body),
        Some("base64") => match base64(body) {
            Some(b) => b,
            None => return message.to_owned(),
        },
        _ => return message.to_owned(),
    };
    format!("{}\n\n{plain}", &message[..message.len() - body.len()].trim_end_matches('\n'))
}

/// Split an mbox into `(name, text)` per patch (see the module rules). A text without
/// separators is one patch named `file`, whatever it holds.
pub fn split(text: &str, file: &str) -> Vec<(String, String)> {
    let all = messages(text);
    if all.len() <= 1 && !text.lines().next().is_some_and(is_separator) {
        return vec![(file.to_owned(), text.to_owned())];
    }
    // (subject, M of `M/N`, text) of each patch kept.
    let mut kept: Vec<(String, Option<u32>, String)> = Vec::new();
    for m in &all {
        let (headers, body) = parse(m);
        let subject = header(&headers, "subject").unwrap_or("").to_owned();
        let text = decoded(m, &headers, body);
        let reply = subject.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("re:"));
        if reply || is_cover_letter(&subject) || !has_diff(&text) {
            continue;
        }
        let number = numbering(&subject).map(|(m, _)| m);
        kept.push((subject, number, text));
    }
    let mut numbers: Vec<u32> = kept.iter().filter_map(|(_, n, _)| *n).collect();
    numbers.sort_unstable();
    numbers.dedup();
    if numbers.len() == kept.len() {
        kept.sort_by_key(|(_, n, _)| n.unwrap_or(0));
    }
    kept.into_iter()
        .enumerate()
        .map(|(i, (subject, _, text))| (format!("{file}#{} {subject}", i + 1).trim_end().to_owned(), text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "---\n dir/f.c | 2 +-\n\ndiff --git a/dir/f.c b/dir/f.c\n--- a/dir/f.c\n+++ b/dir/f.c\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";

    /// A `b4 am` mbox: no cover letter in it (b4 writes that to a .cover file), a
    /// folded subject, collected trailers, and a commit message with a `From ` line.
    fn b4_am() -> String {
        format!(
            "From git@z Thu Jan  1 00:00:00 1970\nSubject: [PATCH v2 1/2] cpumask: add\n cpumask_weight_andnot()\n\
             From: Yury Norov <yury.norov@gmail.com>\nDate: Mon, 22 Jan 2024 08:00:56 -0800\n\
             Content-Type: text/plain; charset=\"utf-8\"\nContent-Transfer-Encoding: 7bit\n\n\
             Similarly to cpumask_weight_and()...\n\nFrom the above, it is handy.\n\n\
             Signed-off-by: Yury Norov <yury.norov@gmail.com>\nReviewed-by: Jacob Keller <jacob.e.keller@intel.com>\n\
             Link: https://lore.kernel.org/r/1705939259-2859-2-git-send-email-schakrabarti@linux.microsoft.com\n{DIFF}\n\
             From git@z Thu Jan  1 00:00:00 1970\nSubject: [PATCH v2 2/2] net: mana: add a function to spread IRQs\n\
             \x20per CPUs\n\n\
             body\n{DIFF}"
        )
    }

    #[test]
    fn b4_am_output_gives_one_patch_per_message_with_the_whole_subject() {
        let s = split(&b4_am(), "v2.mbx");
        let names: Vec<&str> = s.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "v2.mbx#1 [PATCH v2 1/2] cpumask: add cpumask_weight_andnot()",
                "v2.mbx#2 [PATCH v2 2/2] net: mana: add a function to spread IRQs per CPUs"
            ]
        );
        assert!(s[0].1.contains("From the above, it is handy."), "a From line of a message is not a separator");
        assert!(s[0].1.contains("Reviewed-by: Jacob Keller"));
    }

    #[test]
    fn cover_letters_replies_and_messages_without_a_diff_are_skipped_and_numbers_order_the_rest() {
        let cover = "From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH net-next v2 0/2] net: mana: IRQs on HT cores\n\n\
                     Yury Norov (2):\n  cpumask: x\n\n dir/f.c | 2 +-\n--- \n2.34.1\n\n";
        let reply =
            format!("From 9 Mon Sep 17 00:00:00 2001\nSubject: Re: [PATCH v2 1/2] cpumask: add\n\n> quoted\n{DIFF}\n");
        let two = format!("From 2 Mon Sep 17 00:00:00 2001\nSubject: [PATCH net-next v2 2/2] second\n\n{DIFF}\n");
        let one = format!("From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH net-next v2 1/2] first\n\n{DIFF}\n");
        let thread = format!("{cover}{reply}{two}{one}");
        let names: Vec<String> = split(&thread, "t.mbox").into_iter().map(|p| p.0).collect();
        assert_eq!(names, ["t.mbox#1 [PATCH net-next v2 1/2] first", "t.mbox#2 [PATCH net-next v2 2/2] second"]);
        assert!(
            is_cover_letter("[RFC PATCH 00/12] x") && !is_cover_letter("[PATCH 1/2] x") && !is_cover_letter("x 0/2")
        );
        assert_eq!(numbering("Re: [PATCH v3 net-next 3/4] y"), Some((3, 4)));
    }

    #[test]
    fn quoted_printable_and_base64_bodies_are_decoded() {
        let qp = "From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] qp\nContent-Transfer-Encoding: quoted-printable\n\n\
                  diff --git a/dir/f.c b/dir/f.c\n--- a/dir/f.c\n+++ b/dir/f.c\n@@ -1,3 +1,3 @@\n a\n-b\n+x =3D=\n 1;\n c\n";
        let s = split(qp, "q.mbox");
        assert!(s[0].1.contains("+x = 1;\n"), "{}", s[0].1);
        assert!(s[0].1.starts_with("From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] qp\n"), "{}", s[0].1);
        // "diff --git a/f b/f\n" in base64.
        let b64 = "From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] b\nContent-Transfer-Encoding: base64\n\nZGlmZiAtLWdpdCBhL2YgYi9mCg==\n";
        assert!(split(b64, "b.mbox")[0].1.ends_with("\n\ndiff --git a/f b/f\n"));
        assert_eq!(base64("ab$c"), None);
    }

    #[test]
    fn separators_are_told_from_message_lines() {
        assert!(is_separator("From 9f3c4b2a Mon Sep 17 00:00:00 2001"));
        assert!(is_separator("From git@z Thu Jan  1 00:00:00 1970"));
        assert!(is_separator("From mhklinux@outlook.com Tue Jan  9 19:22:38 2024"));
        assert!(!is_separator("From the above, is that correct"));
        assert!(!is_separator("From: Yury Norov <yury.norov@gmail.com>"));
        // Not an mbox at all: one patch named after the file.
        assert_eq!(split(DIFF, "x.patch")[0].0, "x.patch");
    }
}
