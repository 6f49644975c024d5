//! `kca lab show LAB`: what a lab is and, above all, which programs it will run. A lab
//! is code: its `command` checks run programs on the grading machine (once per `lab
//! check`, and once per variant under `lab verify`), so whoever grades a third-party lab
//! should read this list first.

use serde_json::json;

use super::lifecycle;
use crate::cli::lab::ShowArgs;
use crate::content::lab::{Lab, Spec};
use crate::ctx::Ctx;
use crate::error::Result;
use crate::escape::escape;
use crate::exit::Exit;
use crate::settings::{Lang, OutputFormat};

/// One program a lab runs: the check it belongs to, its arguments and extra environment.
struct Program<'a> {
    task: &'a str,
    check: &'a str,
    run: &'a [String],
    env: Vec<(&'a str, &'a str)>,
}

fn programs(lab: &Lab) -> Vec<Program<'_>> {
    lab.checks()
        .filter_map(|(t, c)| match &c.spec {
            Spec::Command { run, env, .. } => Some(Program {
                task: &t.id,
                check: &c.id,
                run,
                env: env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
            }),
            _ => None,
        })
        .collect()
}

/// A command line as a person would type it, quoting what needs quoting.
fn shell_words(run: &[String]) -> String {
    run.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_alphanumeric() || "-_./=:{}%+@,".contains(c));
            if plain {
                escape(a).into_owned()
            } else {
                format!("'{}'", escape(&a.replace('\'', "'\\''")))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn show(ctx: &Ctx, args: &ShowArgs) -> Result<Exit> {
    let lab = lifecycle::load(ctx, &args.lab)?;
    let lang = ctx.settings.lang;
    let progs = programs(&lab);
    let p = &ctx.printer;
    if ctx.settings.output == OutputFormat::Json {
        let commands: Vec<_> = progs
            .iter()
            .map(|g| json!({"task": g.task, "check": g.check, "run": g.run, "env": g.env.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>()}))
            .collect();
        let checks: Vec<_> = lab
            .checks()
            .map(|(t, c)| json!({"task": t.id, "id": c.id, "kind": c.spec.kind(), "points": c.points}))
            .collect();
        p.json(&json!({
            "schemaVersion": super::report::SCHEMA_VERSION,
            "lab": lab.id,
            "title": lab.title.get(lang),
            "dir": lab.dir.display().to_string(),
            "checks": checks,
            "commands": commands,
            "variants": 2 + lab.mutants.len(),
        }));
        return Ok(Exit::Success);
    }
    let tr = |ja: &str, en: &str| {
        if lang == Lang::Ja {
            ja.to_string()
        } else {
            en.to_string()
        }
    };
    p.out(&format!("{} — {}", lab.id, escape(lab.title.get(lang))));
    p.out(&format!("  {}", crate::escape::path(&lab.dir)));
    p.out("");
    for t in &lab.tasks {
        p.out(&format!("  {} — {}", t.id, escape(t.title.get(lang))));
        for c in &t.checks {
            p.out(&format!("    {} ({}, {})", c.id, c.spec.kind(), c.points));
        }
    }
    p.out("");
    if progs.is_empty() {
        p.out(&tr(
            "このラボはプログラムを実行しません(command チェックなし)。",
            "This lab runs no programs (it has no `command` checks).",
        ));
        return Ok(Exit::Success);
    }
    p.out(&tr(
        &format!(
            "このラボが実行するプログラム(ワークスペースで、あなたの権限で。`lab check` ごとに1回、`lab verify` では {} 回ずつ):",
            2 + lab.mutants.len()
        ),
        &format!(
            "Programs this lab runs (in the workspace, as you; once per `lab check`, {} times each under `lab verify`):",
            2 + lab.mutants.len()
        ),
    ));
    for g in &progs {
        let env: String = g
            .env
            .iter()
            .map(|(k, v)| format!("{}={} ", escape(k), shell_words(&[v.to_string()])))
            .collect();
        p.out(&format!(
            "  {}/{}: {env}{}",
            g.task,
            g.check,
            shell_words(g.run)
        ));
    }
    p.out(&tr(
        "ラボはコードです: 信頼できる作者のラボだけを採点してください。",
        "A lab is code: grade only labs whose authors you trust.",
    ));
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_lab_lists_its_gate_command() {
        let tmp = tempfile::tempdir().unwrap();
        let root = crate::lab::scaffold::new_lab(tmp.path(), "kca-show").unwrap();
        let Ok(crate::content::Document::Lab(lab)) =
            crate::content::load_file(&root.join("lab.yaml"))
        else {
            panic!()
        };
        let progs = programs(&lab);
        assert_eq!(progs.len(), 1);
        assert_eq!((progs[0].task, progs[0].check), ("gate", "gate-ok"));
        assert_eq!(shell_words(progs[0].run), "bash gate.sh");
        assert_eq!(
            shell_words(&["sh".into(), "-c".into(), "echo 'hi'; rm x\n".into()]),
            "sh -c 'echo '\\''hi'\\''; rm x\\n'"
        );
    }
}
