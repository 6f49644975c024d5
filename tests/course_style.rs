//! One Japanese style across lessons and quizzes (lessons/README.md, "Japanese style"):
//! a half-width space between a kana or kanji and an adjacent ASCII word or code span.

use std::path::Path;

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3005 | 0x3040..=0x309F | 0x30A0..=0x30FA | 0x30FC..=0x30FF
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF)
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '`'
}

/// The text with each code span's content emptied (its Japanese is code, not prose).
fn without_code(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 0 {
            out.push_str(part);
        } else {
            out.push('x');
        }
    }
    out
}

/// Places where a kana/kanji touches an ASCII letter or a backtick.
fn unspaced(text: &str) -> Vec<String> {
    let chars: Vec<char> = without_code(text).chars().collect();
    chars
        .windows(2)
        .enumerate()
        .filter(|(_, w)| (is_cjk(w[0]) && is_word(w[1])) || (is_word(w[0]) && is_cjk(w[1])))
        .map(|(i, _)| {
            let from = i.saturating_sub(6);
            chars[from..(i + 8).min(chars.len())].iter().collect()
        })
        .collect()
}

/// The Japanese text of a file: lesson lines outside code blocks, quiz `ja:` strings.
fn japanese_lines(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut fence = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if path.extension().is_some_and(|e| e == "md") {
            if line.starts_with("```") {
                fence = !fence;
                continue;
            }
            if !fence {
                out.push((n + 1, line.to_string()));
            }
        } else if let Some(rest) = line
            .trim_start()
            .trim_start_matches("- ")
            .strip_prefix("ja: ")
        {
            out.push((n + 1, rest.to_string()));
        }
    }
    out
}

#[test]
fn japanese_text_spaces_ascii_terms_in_lessons_and_quizzes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for m in 0..4 {
        files.push(root.join(format!("lessons/module-{m}/ja.md")));
        files.push(root.join(format!("quizzes/module-{m}.yaml")));
    }
    let mut bad = Vec::new();
    for f in &files {
        for (n, line) in japanese_lines(f) {
            for place in unspaced(&line) {
                bad.push(format!("{}:{n}: …{place}…", f.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} places without the space:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_style_check_finds_a_missing_space() {
    assert_eq!(unspaced("Podのspec").len(), 2);
    assert!(unspaced("Pod の spec、`x` を").is_empty());
    assert!(unspaced("`--pass 種類` で").is_empty());
    assert_eq!(unspaced("`x`を").len(), 1);
}
