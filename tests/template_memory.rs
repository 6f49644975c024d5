//! The memory bound of starter templates (`kca::lab::template::memory_bound`) holds for
//! real: this test binary counts every byte allocated, renders generated templates that
//! the bound accepts, and checks that what rendering held at its peak, beyond parsing,
//! stays within the bound. One test in this file, so nothing else allocates meanwhile.

use kca::lab::template::{MAX_MEMORY, memory_bound, render};

#[path = "common/counting.rs"]
mod counting;
use counting::peak_of;

/// xorshift64*: the same templates on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const NAMES: &[&str] = &["v0", "v1", "v2", "lab", "namespace", "lab_dir"];

fn atom(r: &mut Rng) -> String {
    match r.below(6) {
        0 => format!(
            "\"{}\"",
            r.pick(&["a", "ab\nab", "'a'/<b>", "", "x-y-z", "ΐ"])
        ),
        1 => format!("range(end={})", r.below(40)),
        2 => r.below(1000).to_string(),
        3 => r.pick(&["v2[0]", "v2.0", "loop.index"]).to_string(),
        _ => r.pick(NAMES).to_string(),
    }
}

fn filter(r: &mut Rng) -> String {
    let arg = r.pick(NAMES);
    match r.below(24) {
        0 => format!("replace(from=\"a\", to={arg})"),
        1 => format!("replace(from=\"\", to={arg})"),
        2 => format!("indent(prefix={arg}, blank=true)"),
        3 => "split(pat=\"a\")".into(),
        4 => "split(pat=\"\")".into(),
        5 => format!("join(sep={arg})"),
        6 => format!("concat(with={arg})"),
        7 => "json_encode(pretty=true)".into(),
        8 => format!("default(value={arg})"),
        9 => "truncate(length=3)".into(),
        10 => "slice(end=2)".into(),
        11 => format!("pluralize(plural={arg})"),
        12 => "unique".into(),
        13 => "sort".into(),
        14 => "escape_xml".into(),
        _ => r
            .pick(&[
                "upper",
                "lower",
                "capitalize",
                "title",
                "trim",
                "escape",
                "addslashes",
                "linebreaksbr",
                "length",
                "first",
                "last",
                "reverse",
                "as_str",
            ])
            .into(),
    }
}

fn expr(r: &mut Rng) -> String {
    let mut e = match r.below(4) {
        0 => format!("{} ~ {}", atom(r), atom(r)),
        1 => format!("[{}, {}]", atom(r), atom(r)),
        _ => atom(r),
    };
    for _ in 0..r.below(3) {
        e = format!("{e} | {}", filter(r));
    }
    e
}

fn block(r: &mut Rng, depth: u32) -> String {
    let mut out = String::new();
    for _ in 0..1 + r.below(5) {
        let s = match r.below(if depth < 2 { 7 } else { 4 }) {
            0 | 1 => format!("{{% set {} = {} %}}", r.pick(&["v0", "v1", "v2"]), expr(r)),
            2 => format!("{{{{ {} }}}}\n", expr(r)),
            3 => "text ".into(),
            4 => format!(
                "{{% for x in {} %}}{}{{% endfor %}}",
                r.pick(&["range(end=30)", "v0", "v1", "v2", "namespace"]),
                block(r, depth + 1)
            ),
            5 => format!(
                "{{% if {} %}}{}{{% else %}}{}{{% endif %}}",
                r.pick(&[
                    "v0",
                    "lab",
                    "not v1",
                    "lab is matching(\"^k.*o$\")",
                    "\"a\" in v1",
                    "v0 is defined",
                    "v2 | length > 1",
                    "v1 == v0 ~ v1",
                ]),
                block(r, depth + 1),
                block(r, depth + 1)
            ),
            _ => format!(
                "{{% filter {} %}}{}{{% endfilter %}}",
                r.pick(&["upper", "trim", "escape"]),
                block(r, depth + 1)
            ),
        };
        out.push_str(&s);
    }
    out
}

fn ctx() -> tera::Context {
    let mut c = tera::Context::new();
    c.insert("lab", "kca-demo");
    c.insert("namespace", "kca-demo-a");
    c.insert("workspace", "/root/kca-demo");
    c.insert("lab_dir", "/course/labs/kca-demo");
    c
}

#[test]
fn rendering_holds_no_more_memory_than_the_bound_says() {
    let ctx = ctx();
    let (_, fixed) = peak_of(|| render("", &ctx));
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let start = "{% set v0 = lab %}{% set v1 = \"a\" %}{% set v2 = [namespace] %}";
    let mut texts: Vec<String> = (0..150)
        .map(|_| start.to_string() + &block(&mut r, 0))
        .collect();
    // Growth that the bound accepts, up to about a mebibyte.
    for n in [8, 14, 18, 19] {
        texts.push("{% set a = lab %}".to_string() + &"{% set a = a ~ a %}".repeat(n) + "{{ a }}");
    }
    let (mut accepted, mut rendered, mut largest) = (0, 0, 0u64);
    for text in &texts {
        let Ok(bound) = memory_bound(text, &ctx) else {
            continue;
        };
        assert!(bound <= MAX_MEMORY, "{text}");
        accepted += 1;
        // Parsing is outside the bound (its tree lives on while the template renders).
        let (_, parse) = peak_of(|| tera::Template::new("t", None, text).map(|t| t.ast.len()));
        let (out, used) = peak_of(|| render(text, &ctx));
        rendered += usize::from(out.is_ok());
        largest = largest.max(used);
        assert!(
            used <= bound + fixed + 2 * parse,
            "rendering held {used} bytes; bound {bound} + fixed {fixed} + parse {parse}: {text:?}"
        );
    }
    eprintln!(
        "{accepted} of {} templates accepted, {rendered} rendered; most held: {largest} bytes",
        texts.len()
    );
    assert!(accepted > 100 && rendered > 15, "{accepted} {rendered}");
    // Parsing is outside the bound; it is bounded by the template's size, which is capped.
    let unit = "{% for x in range(end=2) %}{% if lab %}{{ [lab, \"a\"] | join(sep=v0) }}\
                {% endif %}{% set v0 = lab ~ x %}{% endfor %}";
    let big = unit.repeat(kca::lab::template::MAX_TEMPLATE / unit.len());
    let (ast, parse) = peak_of(|| tera::Template::new("t", None, &big).map(|t| t.ast.len()));
    assert!(ast.is_ok());
    eprintln!(
        "parsing {} KiB took {} KiB at its peak",
        big.len() >> 10,
        parse >> 10
    );
    assert!(parse < 64 << 20, "{parse}");
    assert!(
        largest > 1 << 20,
        "no generated template used much memory: {largest}"
    );
}
