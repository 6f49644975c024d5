//! `kca lab …`: dispatches the lab commands and prints `verify`/`new` results.

use super::{lifecycle, overview, reset, scaffold, verify};
use crate::cli::lab::{LabCommand, NewArgs, VerifyArgs};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::OutputFormat;
use crate::state::Store;
use crate::ui::Style;

pub fn run(ctx: &Ctx, cmd: LabCommand) -> Result<Exit> {
    let store = Store::new(&ctx.settings.state_dir);
    let seed = match &cmd {
        LabCommand::Check(a) => a.seed,
        LabCommand::Verify(a) => a.seed,
        _ => None,
    };
    if let Some(s) = seed {
        super::vary::set_seed(s);
    }
    let result = match cmd {
        LabCommand::List => overview::list(ctx, &store),
        LabCommand::Start(a) => lifecycle::start(ctx, &store, &a),
        LabCommand::Check(a) => lifecycle::check(ctx, &store, &a),
        LabCommand::Hint(a) => lifecycle::hint(ctx, &store, &a),
        LabCommand::Status(a) => overview::status(ctx, &store, a.lab.as_deref()),
        LabCommand::Task(a) => super::task::task(ctx, &store, &a),
        LabCommand::Watch(a) => super::watch::watch(ctx, &store, &a),
        LabCommand::Reset(a) => reset::reset(ctx, &store, &a),
        LabCommand::Verify(a) => run_verify(ctx, &a),
        LabCommand::New(a) => new(ctx, &a),
        LabCommand::Show(a) => super::show::show(ctx, &a),
    };
    for w in store.take_warnings() {
        ctx.printer.warn(&w);
    }
    result
}

fn run_verify(ctx: &Ctx, args: &VerifyArgs) -> Result<Exit> {
    if !args.offline && !args.live {
        return Err(Error::usage(
            crate::error::msg("どこで確かめるかを指定します", "say where to verify"),
            crate::error::msg(
                "`kca lab verify --offline` か、ラボのクラスターで `--live` を実行します",
                "run `kca lab verify --offline`, or `--live` on a lab cluster",
            ),
        ));
    }
    let ids = if args.labs.is_empty() {
        lifecycle::lab_ids(ctx)
    } else {
        args.labs.clone()
    };
    if ids.is_empty() {
        let dir = lifecycle::labs_dir(ctx);
        return Err(Error::usage(
            crate::error::msg(
                format!("{} にラボがありません", dir.display()),
                format!("no labs in {}", dir.display()),
            ),
            crate::error::msg(
                "`kca lab new ID` で作ります",
                "create one with `kca lab new ID`",
            ),
        ));
    }
    let mut verdicts = Vec::new();
    let labs = ids
        .iter()
        .map(|id| lifecycle::load(ctx, id))
        .collect::<Result<Vec<_>>>()?;
    if args.live {
        verdicts = ctx.block_on(async {
            // Variants are applied and deleted again: only on a cluster marked for labs.
            let sel = crate::cluster::Selection::from(&args.target);
            let live = std::sync::Arc::new(crate::cluster::ensure_cluster(ctx, &sel, true).await?);
            let mut out = Vec::new();
            for lab in &labs {
                ctx.printer.status(&format!("verifying {} live…", lab.id));
                let graded = verify::grade_live(ctx, live.clone(), lab).await?;
                out.push(verify::verdict_from_live(lab, graded)?);
            }
            Ok::<_, Error>(out)
        })?;
    }
    if !args.live {
        for lab in &labs {
            ctx.printer.status(&format!("verifying {}…", lab.id));
        }
        for v in verify::verify_all(&labs) {
            verdicts.push(v?);
        }
    }
    let p = &ctx.printer;
    if ctx.settings.output == OutputFormat::Json {
        p.json(&verify::json(&verdicts));
        return Ok(verify::exit(&verdicts));
    }
    for v in &verdicts {
        let word = if v.ok {
            p.paint(Style::Pass, "✓ VERIFIED")
        } else {
            p.paint(Style::Fail, "✗ NOT VERIFIED")
        };
        p.out(&format!("{word} {}", v.lab));
        for s in v.stages() {
            let mark = if s.ok {
                p.paint(Style::Pass, "ok  ")
            } else if s.environment_only {
                p.paint(Style::Skip, "skip")
            } else {
                p.paint(Style::Fail, "FAIL")
            };
            let failed = if s.failed.is_empty() {
                String::new()
            } else {
                format!(" (fails: {})", s.failed.join(", "))
            };
            p.out(&format!("  {mark} {}{failed}", s.name));
            for d in &s.differs {
                p.out(&format!("         ≠ {d}"));
            }
            for prob in &s.problems {
                for (i, line) in prob.lines().enumerate() {
                    let lead = if i == 0 { "- " } else { "  " };
                    p.out(&format!("         {lead}{line}"));
                }
            }
        }
    }
    Ok(verify::exit(&verdicts))
}

fn new(ctx: &Ctx, args: &NewArgs) -> Result<Exit> {
    let dir = args.dir.clone().unwrap_or_else(|| lifecycle::labs_dir(ctx));
    let scaffold::Created { root, schemas } = scaffold::new_lab_with_schemas(&dir, &args.id)?;
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(
            &serde_json::json!({"schemaVersion": 1, "lab": args.id, "dir": root, "schemas": schemas}),
        );
    } else {
        ctx.printer.out(&format!("created {}", root.display()));
        for s in &schemas {
            ctx.printer.out(&format!(
                "wrote {} (for editors: lab.yaml's $schema line)",
                s.display()
            ));
        }
        ctx.printer.out(&ctx.printer.paint(
            crate::ui::Style::Hint,
            &format!(
                "next: edit {}, then `kca validate {}` and `kca lab verify --offline {}`",
                root.join("lab.yaml").display(),
                root.display(),
                args.id
            ),
        ));
    }
    Ok(Exit::Success)
}
