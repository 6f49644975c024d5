//! `curl` against `kubectl proxy` (`http://localhost:8001/…`): the request goes to the
//! replay's API server as the admin ([`super::Host::api`]). The flags of curl's manual
//! that the suite uses: `-f`/`--fail` (an HTTP error is exit 22, the body not written),
//! `-s`/`--silent`, `-S`/`--show-error`, `-L`/`--location`, `-v`/`--verbose`,
//! `-o`/`--output FILE`, `-H`/`--header`, `-X`/`--request`, `-d`/`--data[-raw]`
//! (`@file` read from the test's folder, its newlines stripped as curl does). With no
//! proxy running the connection is refused: exit 7. curl's own messages (progress meter,
//! verbose trace, error lines) vary by version: they are written as [`Unknown`] text.
//! Other URLs or flags are skips naming them.

use super::{Io, Shell, Text, Unknown, Unwind};

/// One request as the proxy forwards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path, from `/`.
    pub path: String,
    pub content_type: Option<String>,
    pub body: Option<String>,
}

/// The API server's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// 2xx (else an error status, whose code the body may tell).
    pub success: bool,
    pub body: Text,
}

/// The proxy's addresses.
const PROXY_ORIGINS: &[&str] = &["http://localhost:8001", "http://127.0.0.1:8001"];

/// Parsed flags.
#[derive(Debug, Default)]
struct Flags {
    fail: bool,
    silent: bool,
    show_error: bool,
    verbose: bool,
    output: Option<String>,
    headers: Vec<String>,
    method: Option<String>,
    data: Option<String>,
    url: Option<String>,
}

fn parse(args: &[String]) -> Result<Flags, Unwind> {
    let mut f = Flags::default();
    let mut it = args.iter();
    let value = |it: &mut std::slice::Iter<'_, String>, flag: &str| {
        it.next()
            .cloned()
            .ok_or_else(|| Unwind::Skip(format!("`curl {flag}` without its value")))
    };
    while let Some(a) = it.next() {
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let take = |it: &mut std::slice::Iter<'_, String>| match inline.clone() {
                Some(v) => Ok(v),
                None => value(it, a),
            };
            match name {
                "fail" => f.fail = true,
                "silent" => f.silent = true,
                "show-error" => f.show_error = true,
                "location" => {}
                "verbose" => f.verbose = true,
                "output" => f.output = Some(take(&mut it)?),
                "header" => f.headers.push(take(&mut it)?),
                "request" => f.method = Some(take(&mut it)?),
                "data" | "data-raw" | "data-ascii" => {
                    let v = take(&mut it)?;
                    f.data = Some(v);
                }
                other => return Err(Unwind::Skip(format!("`curl --{other}`"))),
            }
            continue;
        }
        let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) else {
            if f.url.replace(a.clone()).is_some() {
                return Err(Unwind::Skip("`curl` of several URLs".into()));
            }
            continue;
        };
        let cs: Vec<char> = short.chars().collect();
        for (i, c) in cs.iter().enumerate() {
            let rest: String = cs[i + 1..].iter().collect();
            let take = |it: &mut std::slice::Iter<'_, String>| {
                if rest.is_empty() {
                    value(it, a)
                } else {
                    Ok(rest.clone())
                }
            };
            match c {
                'f' => f.fail = true,
                's' => f.silent = true,
                'S' => f.show_error = true,
                'L' => {}
                'v' => f.verbose = true,
                'o' => f.output = Some(take(&mut it)?),
                'H' => f.headers.push(take(&mut it)?),
                'X' => f.method = Some(take(&mut it)?),
                'd' => f.data = Some(take(&mut it)?),
                other => return Err(Unwind::Skip(format!("`curl -{other}`"))),
            }
            if matches!(c, 'o' | 'H' | 'X' | 'd') {
                break;
            }
        }
    }
    Ok(f)
}

/// Text of curl's own that a version words its way.
fn curls(s: String, why: &str) -> Text {
    Text {
        s,
        unknown: Some(Unknown {
            why: why.to_string(),
            ..Default::default()
        }),
    }
}

impl Shell<'_> {
    pub(super) fn curl(&mut self, args: &[String], io: &mut Io) -> Result<i32, Unwind> {
        let f = parse(args)?;
        let Some(url) = f.url.clone() else {
            io.print(2, "curl: no URL specified!\n");
            return Ok(2);
        };
        let Some(path) = PROXY_ORIGINS
            .iter()
            .find_map(|o| url.strip_prefix(o))
            .filter(|p| p.is_empty() || p.starts_with('/'))
        else {
            return Err(Unwind::Skip(format!(
                "`curl {url}` (not the kubectl proxy)"
            )));
        };
        if path.contains(['?', '#']) {
            return Err(Unwind::Skip(format!("`curl` of a query ({url})")));
        }
        let path = if path.is_empty() { "/" } else { path }.to_string();
        let body = match f.data.as_deref() {
            Some(d) => Some(match d.strip_prefix('@') {
                Some(file) => match self.files.read(file) {
                    // `-d @file`: carriage returns and newlines are stripped.
                    Ok(s) => s.replace(['\r', '\n'], ""),
                    Err(_) => {
                        io.write(
                            2,
                            curls(
                                format!("Warning: Couldn't read data from file \"{file}\"\n"),
                                "curl's warning",
                            ),
                        );
                        String::new()
                    }
                },
                None => d.to_string(),
            }),
            None => None,
        };
        let mut content_type = body
            .as_ref()
            .map(|_| "application/x-www-form-urlencoded".to_string());
        for h in &f.headers {
            let Some((name, v)) = h.split_once(':') else {
                return Err(Unwind::Skip(format!("`curl -H {h}`")));
            };
            let name = name.trim().to_ascii_lowercase();
            match name.as_str() {
                "content-type" => content_type = Some(v.trim().to_string()),
                "accept" | "user-agent" => {}
                other => return Err(Unwind::Skip(format!("`curl` with the header `{other}`"))),
            }
        }
        let method = match (&f.method, &body) {
            (Some(m), _) => m.to_ascii_uppercase(),
            (None, Some(_)) => "POST".into(),
            (None, None) => "GET".into(),
        };
        let errors_shown = !f.silent || f.show_error;
        if self.jobs.proxy.is_none() {
            if errors_shown {
                io.write(
                    2,
                    curls(
                        "curl: (7) Failed to connect to localhost port 8001: Connection refused\n"
                            .into(),
                        "curl's error line",
                    ),
                );
            }
            return Ok(7);
        }
        let req = Request {
            method,
            path,
            content_type,
            body,
        };
        let resp = self.host.api(&req)?;
        if f.verbose {
            io.write(
                2,
                curls(
                    format!(
                        "> {} {} HTTP/1.1\n> Host: localhost:8001\n",
                        req.method, req.path
                    ),
                    "curl's verbose trace",
                ),
            );
        } else if !f.silent {
            io.write(2, curls(String::new(), "curl's progress meter"));
        }
        if f.fail && !resp.success {
            if errors_shown {
                io.write(
                    2,
                    curls(
                        "curl: (22) The requested URL returned error\n".into(),
                        "curl's error line (its status code)",
                    ),
                );
            }
            return Ok(22);
        }
        match f.output.as_deref() {
            None | Some("-") => io.write(1, resp.body),
            Some("/dev/null") => {}
            Some(file) => {
                let s = resp
                    .body
                    .exact(&format!("a write to `{file}`"))?
                    .to_string();
                self.files.written.insert(file.to_string(), s);
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn curl_flags_as_the_manual_writes_them() {
        let f =
            parse(&words("--output /dev/null -fsSL http://localhost:8001/")).unwrap_or_default();
        assert!(f.fail && f.silent && f.show_error);
        assert_eq!(f.output.as_deref(), Some("/dev/null"));
        assert_eq!(f.url.as_deref(), Some("http://localhost:8001/"));
        let f = parse(&words("-v -H Content-type:x u -d @e.json")).unwrap_or_default();
        assert!(f.verbose);
        assert_eq!(f.headers, vec!["Content-type:x".to_string()]);
        assert_eq!(f.data.as_deref(), Some("@e.json"));
        let f = parse(&words("-XPATCH --request=PUT u")).unwrap_or_default();
        assert_eq!(f.method.as_deref(), Some("PUT"));
        assert!(parse(&words("-k u")).is_err());
        assert!(parse(&words("--cacert x u")).is_err());
    }
}
