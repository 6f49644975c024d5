//! Where a large multi-document stream can be cut so that its pieces parse on separate
//! threads: only before a document marker line, which no scalar can contain.
//!
//! YAML 1.2.2 production [206] `c-forbidden` is `---` or `...` at the start of a line
//! followed by white space, a line break or the end of the input, and [207]
//! `l-bare-document` excludes it from every document's content ("Excluding
//! c-forbidden content"): no plain, quoted or block scalar can hold such a line, so each
//! one starts a new document (or is an error wherever the sequential parse would also
//! fail). Cutting right before one gives pieces that are streams of whole documents.
//!
//! A `%` directive line would belong to the document after it and could end up in the
//! piece before, so a stream with any line starting with `%` is never cut.

/// Streams smaller than this are parsed on the calling thread: a thread costs more than
/// it saves.
pub(super) const MIN_PIECE_BYTES: usize = if cfg!(test) { 16 * 1024 } else { 256 * 1024 };

/// One piece of a stream: its text, and how many lines come before it in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Piece<'s> {
    pub text: &'s str,
    pub line_offset: usize,
}

/// Cuts `src` into at most `parts` pieces of about equal size, each starting at a document
/// marker (the first starts at the beginning). One piece when the stream is small, has a
/// directive, or has no marker to cut at.
pub(super) fn split(src: &str, parts: usize) -> Vec<Piece<'_>> {
    let whole = vec![Piece {
        text: src,
        line_offset: 0,
    }];
    if parts < 2 || src.len() < 2 * MIN_PIECE_BYTES || has_directive(src) {
        return whole;
    }
    let mut cuts = vec![0];
    for k in 1..parts {
        let target = src.len() / parts * k;
        let last = cuts.last().copied().unwrap_or(0);
        match next_marker(src, target.max(last + 1)) {
            Some(at) if src.len() - at >= MIN_PIECE_BYTES / 2 => cuts.push(at),
            _ => break,
        }
    }
    let mut pieces = Vec::with_capacity(cuts.len());
    let mut line_offset = 0;
    for (i, &at) in cuts.iter().enumerate() {
        let end = cuts.get(i + 1).copied().unwrap_or(src.len());
        let text = &src[at..end];
        pieces.push(Piece { text, line_offset });
        line_offset += text.bytes().filter(|&b| b == b'\n').count();
    }
    pieces
}

fn has_directive(src: &str) -> bool {
    src.starts_with('%') || src.contains("\n%")
}

/// The byte offset of the first document-start marker line (`---` at column 0, then
/// white space, a line break or the end) that begins after `from`.
fn next_marker(src: &str, from: usize) -> Option<usize> {
    let mut i = from.min(src.len());
    while !src.is_char_boundary(i) {
        i += 1;
    }
    let bytes = src.as_bytes();
    while let Some(found) = src[i..].find("\n---") {
        let at = i + found + 1;
        if matches!(bytes.get(at + 3), None | Some(b' ' | b'\t' | b'\r' | b'\n')) {
            return Some(at);
        }
        i = at;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(docs: usize) -> String {
        (0..docs)
            .map(|i| format!("---\nkind: Role\nmetadata: {{name: r-{i}}}\n"))
            .collect()
    }

    #[test]
    fn small_streams_stay_whole() {
        let src = stream(10);
        assert_eq!(split(&src, 4).len(), 1);
        assert_eq!(split(&stream(40_000), 1).len(), 1);
    }

    #[test]
    fn pieces_start_at_markers_and_count_the_lines_before_them() {
        let src = stream(40_000);
        let pieces = split(&src, 3);
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces.iter().map(|p| p.text).collect::<String>(), src);
        for p in &pieces {
            assert!(p.text.starts_with("---\n"), "{:?}", &p.text[..20]);
            let at = p.text.as_ptr() as usize - src.as_ptr() as usize;
            assert_eq!(p.line_offset, src[..at].matches('\n').count());
        }
    }

    #[test]
    fn markers_need_column_zero_and_a_break_after_them() {
        let filler = "x: y\n".repeat(MIN_PIECE_BYTES / 4);
        // `----`, `---x` and an indented `---` are not markers.
        let src = format!("{filler}----\n---x\n  ---\nb: |\n  ---\n{filler}--- # c\n{filler}");
        let pieces = split(&src, 2);
        assert_eq!(pieces.len(), 2);
        assert!(pieces[1].text.starts_with("--- # c\n"));
    }

    #[test]
    fn directives_keep_the_stream_whole() {
        let src = format!("%YAML 1.2\n{}", stream(40_000));
        assert_eq!(split(&src, 2).len(), 1);
    }
}
