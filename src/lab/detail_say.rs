//! The sentences of [`Detail`]: one Japanese and one English text per kind, the data
//! filled in (part of `lab::detail`; a table of sentences, so one long `match`).

use super::*;

impl Detail {
    /// The sentence(s), in `s.lang`.
    pub fn say(&self, s: Say) -> String {
        use Detail as D;
        let t = |ja: String, en: String| s.t(ja, en);
        match self {
            D::None => String::new(),
            D::FileExists { path } => t(format!("`{path}` があります"), format!("`{path}` exists")),
            D::FileMissing { path } => t(
                format!("ワークスペースに `{path}` がありません"),
                format!("`{path}` does not exist in the workspace"),
            ),
            D::FileUnreadable { error } => t(
                format!("ワークスペースのファイルを読めません: {error}"),
                error.clone(),
            ),
            D::WorkspaceOverBudget { path, at, message } => t(
                format!(
                    "ワークスペースの YAML が 1 回の採点で読める量を超えました: `{path}` ({at}: \
                     {message}) で上限に達したため、クラスターのチェックは判定できません。\
                     `{path}` を小さくするか、ラボで使わないファイルをワークスペースの外へ\
                     移してください"
                ),
                format!(
                    "the workspace holds more YAML than kca grades in one run: reading `{path}` \
                     went over ({at}: {message}); the cluster checks cannot be judged — make \
                     `{path}` smaller or move the files the lab does not need out of the \
                     workspace"
                ),
            ),
            D::NotYaml { path, at, .. } => t(
                format!("`{path}` の {at} に YAML の構文エラーがあります (上の「ファイルの問題」)"),
                format!("`{path}` has a YAML syntax error at {at} (see \"file problems\" above)"),
            ),
            D::NoKind { path, kind, found } => {
                let f = if found.is_empty() {
                    t("種類なし".into(), "no kinds".into())
                } else {
                    found.join(", ")
                };
                t(
                    format!("`{path}` に `{kind}` がありません (あったもの: {f})"),
                    format!("`{path}` holds no `{kind}` (found: {f})"),
                )
            }
            D::FileHolds { path } => t(
                format!("`{path}` は求められた内容です"),
                format!("`{path}` holds what was asked"),
            ),
            D::FileDiffers { path, diff } if path.is_empty() => diff.say(s),
            D::FileDiffers { path, diff } => format!("`{path}`: {}", diff.say(s)),
            D::FileValid { path, documents } => t(
                format!("`{path}` は正しい YAML です (文書 {documents} 個)"),
                format!("`{path}` is valid ({documents} document(s))"),
            ),
            D::Elsewhere { path, found_in } => t(
                format!(
                    "求められた内容は `{found_in}` にありますが、このチェックが読むのは `{path}` です。ファイルを移してください:\nmv {found_in} {path}"
                ),
                format!(
                    "what is asked for is in `{found_in}`, but this check reads `{path}`; move the file there:\nmv {found_in} {path}"
                ),
            ),
            D::NoDocumentNamed { path, kind, name } => t(
                format!("`{path}` に {kind} `{name}` がありません"),
                format!("`{path}` holds no {kind} `{name}`"),
            ),
            D::FileEmpty { path } => t(format!("`{path}` は空です"), format!("`{path}` is empty")),
            D::NoAnswers { path } => t(
                format!("`{path}` に答えのマッピングがありません"),
                format!("`{path}` holds no mapping of answers"),
            ),
            D::Blocked { problems } => {
                let files: Vec<String> = problems
                    .iter()
                    .map(|p| p.split(':').next().unwrap_or(p).to_string())
                    .fold(Vec::new(), |mut v, f| {
                        if !v.contains(&f) {
                            v.push(f);
                        }
                        v
                    });
                let f = files.join(", ");
                t(
                    format!("判定できません: 上の「ファイルの問題」({f}) を先に直してください"),
                    format!("not judged: fix the file problem above ({f}) first"),
                )
            }
            D::CannotRender { what, reason } => t(
                format!("ラボのコマンドの {what} を展開できません: {reason}"),
                format!("cannot render {what}: {reason}"),
            ),
            D::EmptyCommand => t("ラボのコマンドが空です".into(), "the command is empty".into()),
            D::CannotRun { program, error } => t(
                format!("`{program}` を実行できません: {error} (インストールされて PATH にありますか?)"),
                format!("cannot run `{program}`: {error} (is it installed and on PATH?)"),
            ),
            D::TimedOut { ran, seconds } => {
                let n = ran.name();
                t(
                    format!("`{n}` が {seconds} 秒以内に終わりませんでした"),
                    format!("`{n}` did not finish within {seconds}s"),
                ) + &ran.tail(s)
            }
            D::CommandCannotJudge { ran, why } => {
                let n = ran.name();
                t(
                    format!("`{n}` はここでは判定できません: {why}"),
                    format!("`{n}` cannot judge here: {why}"),
                ) + &ran.tail(s)
            }
            D::ExitCode { ran, got, want } => {
                let n = ran.name();
                let got_s = match got {
                    Some(c) => t(format!("終了コード {c}"), format!("exit code {c}")),
                    None => t("シグナル".into(), "a signal".into()),
                };
                let want_s = match want {
                    Some(c) => t(format!("終了コード {c}"), format!("exit code {c}")),
                    None => t("0 以外の終了コード".into(), "a non-zero exit code".into()),
                };
                let more = if s.verbose {
                    ran.tail(s)
                } else {
                    t(
                        "。出力は `-v` で表示します".into(),
                        "; `-v` shows its output".into(),
                    )
                };
                t(
                    format!("`{n}` が{got_s} で終わりました (期待: {want_s})"),
                    format!("`{n}` ended with {got_s}, expected {want_s}"),
                ) + &more
            }
            D::OutputMismatch { ran, stderr, re } => {
                let n = ran.name();
                let more = if s.verbose {
                    ran.tail(s)
                } else {
                    t(
                        "。出力は `-v` で表示します".into(),
                        "; `-v` shows its output".into(),
                    )
                };
                let (sj, se) = match stderr {
                    false => ("出力", "output"),
                    true => ("エラー出力", "error output"),
                };
                (match s.reveal {
                    true => t(
                        format!("`{n}` の{sj}が /{re}/ に合いません"),
                        format!("`{n}`: its {se} does not match /{re}/"),
                    ),
                    false => t(
                        format!("`{n}` の{sj}が期待する形になっていません"),
                        format!("`{n}`: its {se} does not have the expected form"),
                    ),
                }) + &more
            }
            D::CommandPassed { ran, got } => {
                let n = ran.name();
                let c = got.map_or_else(|| "-".to_string(), |c| c.to_string());
                t(
                    format!("`{n}` が終了コード {c} で終わりました"),
                    format!("`{n}` ended with exit code {c}"),
                ) + &ran.tail(s)
            }
            D::CanI {
                user,
                access,
                allowed,
                reason,
                expected,
            } => {
                let yes = |b: bool| match (s.lang, b) {
                    (Lang::Ja, true) => "はい",
                    (Lang::Ja, false) => "いいえ",
                    (Lang::En, true) => "yes",
                    (Lang::En, false) => "no",
                };
                let r = if reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({reason})")
                };
                let e = match expected {
                    Some(b) => t(format!("。期待: {}", yes(*b)), format!("; expected {}", yes(*b))),
                    None => String::new(),
                };
                t(
                    format!("{user} は{} できるか? {}{r}{e}", access.say(s), yes(*allowed)),
                    format!("can {user} {}? {}{r}{e}", access.say(s), yes(*allowed)),
                )
            }
            D::LostWhatSent { what, lost } => t(
                format!(
                    "{} は受け入れられましたが、送ったときの {lost} が失われました (mutate はオブジェクトの他のラベルとアノテーションを残さなければなりません)",
                    what.say(s)
                ),
                format!(
                    "{} was admitted, but lost what it was sent with: {lost} (a mutation must keep the object's other labels and annotations)",
                    what.say(s)
                ),
            ),
            D::Admitted { what } => t(
                format!("{} は受け入れられました", what.say(s)),
                format!("{} was admitted", what.say(s)),
            ),
            D::OutsideUnchanged { what } => t(
                format!("{} は対象外で、変更されずに通りました", what.say(s)),
                format!("{} lies outside the scope and came through unchanged", what.say(s)),
            ),
            D::OutsideChanged { what, changes } => {
                let c: Vec<String> = changes.iter().map(|c| c.say(s)).collect();
                t(
                    format!(
                        "{} はタスクの対象外なのに変更されました: {} (ルールが広すぎます)",
                        what.say(s),
                        c.join("、")
                    ),
                    format!(
                        "{} lies outside the scope the task asks for, but was changed: {} (the rule matches more than it should)",
                        what.say(s),
                        c.join("; ")
                    ),
                )
            }
            D::OutsideLeftAlone { what } => t(
                format!("{} は対象外で、手を付けられませんでした", what.say(s)),
                format!("{} lies outside the scope and was left alone", what.say(s)),
            ),
            D::AdmittedAsExpected { what } => t(
                format!("{} は期待どおりに受け入れられました", what.say(s)),
                format!("{} was admitted as expected", what.say(s)),
            ),
            D::OutsideDiffers { what, diff } => t(
                format!(
                    "{} はタスクの対象外なのに、{} (ルールが広すぎます)",
                    what.say(s),
                    diff.say(s)
                ),
                format!(
                    "{} lies outside the scope the task asks for, but {} (the rule matches more than it should)",
                    what.say(s),
                    diff.say(s)
                ),
            ),
            D::AdmittedBut { what, diff } => t(
                format!("{} は受け入れられましたが、{}", what.say(s), diff.say(s)),
                format!("{} was admitted, but {}", what.say(s), diff.say(s)),
            ),
            D::OutsideDenied { what, message } => t(
                format!(
                    "{} はタスクの対象外なのに拒否されました (ルールが広すぎます)。拒否の理由:\n{message}",
                    what.say(s)
                ),
                format!(
                    "{} lies outside the scope the task asks for, but was denied (the rule matches more than it should): {message}",
                    what.say(s)
                ),
            ),
            D::Denied { what, message } => t(
                format!("{} は拒否されました。拒否の理由:\n{message}", what.say(s)),
                format!("{} was denied: {message}", what.say(s)),
            ),
            D::AdmittedShouldDeny { what } => t(
                format!("{} は受け入れられましたが、拒否されるはずでした", what.say(s)),
                format!("{} was admitted; it should have been denied", what.say(s)),
            ),
            D::DeniedBy { what, by } => t(
                format!("{} は {} に拒否されました", what.say(s), by.say(s)),
                format!("{} was denied by {}", what.say(s), by.say(s)),
            ),
            D::DeniedNotBy { what, by, message } => t(
                format!(
                    "{} は拒否されましたが、{} によるものではありません。拒否の理由:\n{message}",
                    what.say(s),
                    by.say(s)
                ),
                format!(
                    "{} was denied, but not by {}: {message}",
                    what.say(s),
                    by.say(s)
                ),
            ),
            D::GuardWaits { inner, behind } if behind.is_empty() => {
                inner.say(s)
                    + &t(
                        "。このチェックは同じタスクのほかのチェックが通ってから点になりますが、ここでは1つも判定されていません".into(),
                        "; it counts once the task's other checks pass, and none was judged here".into(),
                    )
            }
            D::GuardWaits { inner, behind } => {
                let list = behind.join(", ");
                inner.say(s)
                    + &t(
                        format!("。このチェックはポリシーが働いてから点になります ({list} が通ってから)"),
                        format!(
                            "; a guard, it counts once the policy acts (once {list} pass{})",
                            if behind.len() == 1 { "es" } else { "" }
                        ),
                    )
            }
            D::Varied { seed, inner } => {
                inner.say(s)
                    + &t(
                        format!(" (プローブはシード {seed} で変えています。`--seed {seed}` で同じ実行を繰り返せます)"),
                        format!(" (probes varied with seed {seed}; `--seed {seed}` repeats this run)"),
                    )
            }
            D::NotGenerated { what } => t(
                format!("{what} は生成されませんでした"),
                format!("{what} was not generated"),
            ),
            D::Generated { what } => t(
                format!("{what} が生成されました"),
                format!("{what} was generated"),
            ),
            D::GeneratedAsExpected { what } => t(
                format!("{what} が期待どおりに生成されました"),
                format!("{what} was generated as expected"),
            ),
            D::GeneratedBut { what, diff } => t(
                format!("{what} は生成されましたが、{}", diff.say(s)),
                format!("{what} was generated, but {}", diff.say(s)),
            ),
            D::SyncGone { what, source } => t(
                format!("{source} を変えたら {what} が消えました"),
                format!("{what} disappeared after {source} changed"),
            ),
            D::SyncFollowed { what, source } => t(
                format!("{what} が生成され、{source} の変更に追従しました"),
                format!("{what} was generated and followed the change of {source}"),
            ),
            D::SyncNotFollowed { what, source, diff } => t(
                format!(
                    "{what} は生成されましたが、{source} の変更に追従しませんでした (`synchronize: true` はありますか?): {}",
                    diff.say(s)
                ),
                format!(
                    "{what} was generated, but did not follow the change of {source} (is `synchronize: true` set?): {}",
                    diff.say(s)
                ),
            ),
            D::SyncSourceAbsent { what, source } => t(
                format!("{what} は生成されましたが、同期元 {source} がオブジェクトの中にありません"),
                format!("{what} was generated, but the sync source {source} is not among the objects"),
            ),
            D::SyncSourceNotInCluster { source } => t(
                format!("同期元 {source} がクラスターにありません。`kca lab reset` でラボのオブジェクトを戻せます"),
                format!("the sync source {source} is not in the cluster; `kca lab reset` restores the lab's objects"),
            ),
            D::NotLabOwned { what } => t(
                format!("{what} にラボのラベルがありません。kca は自分のオブジェクトしか変えません"),
                format!("{what} does not carry the lab's labels; kca changes only its own objects"),
            ),
            D::OutsideGenerated { what, want } => t(
                format!(
                    "{} はタスクの対象外なのに、{want} が生成されました (ルールが広すぎます)",
                    what.say(s)
                ),
                format!(
                    "{} lies outside the scope the task asks for, but {want} was generated for it (the rule matches more than it should)",
                    what.say(s)
                ),
            ),
            D::OutsideRuleMatched { what, policy } => {
                let (pj, pe) = match policy {
                    Some(p) => (format!("`{p}` の"), format!(" of `{p}`")),
                    None => (String::new(), String::new()),
                };
                t(
                    format!(
                        "{} はタスクの対象外なのに、{pj} generate ルールが一致しました (UpdateRequest が作られます)",
                        what.say(s)
                    ),
                    format!(
                        "{} lies outside the scope the task asks for, but a generate rule{pe} matched it (an UpdateRequest would be created for it)",
                        what.say(s)
                    ),
                )
            }
            D::OutsideUpdateRequest { what } => t(
                format!(
                    "{} はタスクの対象外なのに、Kyverno が UpdateRequest を作りました (generate ルールが一致しました)",
                    what.say(s)
                ),
                format!(
                    "{} lies outside the scope the task asks for, but Kyverno made an UpdateRequest for it (a generate rule matched it)",
                    what.say(s)
                ),
            ),
            D::OutsideNothing { what } => t(
                format!("{} は対象外で、何も生成されませんでした", what.say(s)),
                format!("{} lies outside the scope: nothing was generated for it", what.say(s)),
            ),
            D::RanDifferent => t(
                "generate ルールは動きましたが、別のオブジェクトを作りました".into(),
                "the generate rule ran but produced a different object".into(),
            ),
            D::NoRuleMatched => t(
                "トリガーに対する UpdateRequest が作られていません。generate ルールが一致しませんでした (match/exclude と preconditions を確かめてください)".into(),
                "no UpdateRequest was created for the trigger: the generate rule did not match it (check its match/exclude and preconditions)".into(),
            ),
            D::UpdateRequestFailed {
                message,
                user,
                resource,
                can,
            } => {
                let c = match (s.lang, can) {
                    (Lang::Ja, Some(true)) => "はい".to_string(),
                    (Lang::Ja, Some(false)) => "いいえ — (Cluster)Role とバインディングで権限を渡してください".into(),
                    (Lang::Ja, None) => "不明".into(),
                    (Lang::En, Some(true)) => "yes".into(),
                    (Lang::En, Some(false)) => "no — grant it with a (Cluster)Role and binding".into(),
                    (Lang::En, None) => "unknown".into(),
                };
                t(
                    format!("UpdateRequest が失敗しました: {message}\n{user} は {resource} を create できるか? {c}"),
                    format!("the UpdateRequest failed: {message}; can {user} create {resource}? {c}"),
                )
            }
            D::UpdateRequestFailedUnserved {
                message,
                kind,
                api_version,
            } => t(
                format!("UpdateRequest が失敗しました: {message}\nクラスターは {kind} ({api_version}) を提供していません"),
                format!("the UpdateRequest failed: {message}; the cluster does not serve {kind} ({api_version})"),
            ),
            D::UpdateRequestSkipped { message } => t(
                format!("バックグラウンドコントローラーが UpdateRequest をスキップしました: {message}"),
                format!("the background controller skipped the UpdateRequest: {message}"),
            ),
            D::UpdateRequestCompleted { message } => t(
                format!("UpdateRequest は完了しましたが、生成しませんでした: {message}"),
                format!("the UpdateRequest completed without generating it: {message}"),
            ),
            D::UpdateRequestStuck {
                name,
                state,
                controller,
            } => t(
                format!(
                    "トリガーの UpdateRequest {name} はまだ {state} です。Kyverno のバックグラウンドコントローラーが処理していません (`{controller}` は動いていますか? `kca cluster status` を見てください)"
                ),
                format!(
                    "UpdateRequest {name} for the trigger is still {state}: Kyverno's background controller is not processing it (is `{controller}` running? see `kca cluster status`)"
                ),
            ),
            D::UpdateRequestsUnlisted { error } => t(
                format!("UpdateRequest の一覧を取れません: {error}"),
                format!("could not list UpdateRequests: {error}"),
            ),
            D::Waited { seconds, why } => t(
                format!("({seconds} 秒待ちました) {}", why.say(s)),
                format!(" within {seconds}s; {}", why.say(s)),
            ),
            D::NotDeleted { what, error } => t(
                format!("{what} を削除できません: {error}"),
                format!("could not delete {what}: {error}"),
            ),
            D::NotRestored { what, error } => t(
                format!("{what} を元に戻せません: {error}"),
                format!("could not restore {what}: {error}"),
            ),
            D::Interrupted { what, deleted } => match deleted {
                true => t(
                    format!("中断しました。{what} は削除しました"),
                    format!("interrupted; {what} was deleted"),
                ),
                false => t(
                    format!("中断しました。{what} を削除できませんでした (次の実行で片付けます)"),
                    format!("interrupted; {what} could not be deleted (the next run sweeps it)"),
                ),
            },
            D::InstalledOnly { what } => t(
                format!("{what} はラボではなく動いているインストールのものです。オフラインにはこのオブジェクトがないので判定できません"),
                format!("{what} belongs to the running installation, not to the lab; offline has no such object and cannot judge it"),
            ),
            D::NotApplied { what, denial } => t(
                format!("{what} はクラスターにありません。適用すると失敗します:\n{denial}"),
                format!("{what} is not in the cluster: applying it fails with: {denial}"),
            ),
            D::NotInManifests { what } => t(
                format!("{what} はワークスペースのマニフェストの中にありません"),
                format!("{what} is not among the workspace manifests"),
            ),
            D::NotInCluster { what } => t(
                format!("{what} はクラスターにありません"),
                format!("{what} does not exist in the cluster"),
            ),
            D::Absent { what } => t(format!("{what} はありません"), format!("{what} is absent")),
            D::ExistsShouldNot { what } => t(
                format!("{what} がありますが、ないはずです"),
                format!("{what} exists; it should not"),
            ),
            D::Exists { what } => t(format!("{what} があります"), format!("{what} exists")),
            D::AsExpected { what } => t(
                format!("{what} は期待どおりです"),
                format!("{what} matches"),
            ),
            D::ResourceDiffers { what, diff } => format!("{what}: {}", diff.say(s)),
            D::StatusOffline { what } => t(
                format!("{what} は一致しますが、その status はクラスターのコントローラーが書くものです。オフラインでは判定できません"),
                format!("{what} matches, but its status is written by controllers in a cluster; offline cannot judge it"),
            ),
            D::PolicyNotInCluster { name } => t(
                format!("ポリシー `{name}` がクラスターにありません。`kubectl apply -f` で適用してください"),
                format!("policy `{name}` is not in the cluster; apply it with `kubectl apply -f`"),
            ),
            D::PolicyMissing { what } => t(
                format!("{what} がクラスターにありません。`kubectl apply -f` で適用してください"),
                format!("{what} is not in the cluster; apply it with `kubectl apply -f`"),
            ),
            D::PolicyNotReady { what, why } => t(
                format!("{what} が Ready ではありません。Kyverno の理由: {why}"),
                format!("{what} is not Ready; Kyverno says: {why}"),
            ),
            D::PolicyNoStatus { what, seconds } => t(
                format!(
                    "{what} に {seconds} 秒たっても status がありません。Kyverno のコントローラーが見ていません。Kyverno の Pod (`kubectl -n kyverno get pods`、`kca cluster status`) とログを見てください。ポリシー自体の問題ではありません"
                ),
                format!(
                    "{what} has no status after {seconds}s: no Kyverno controller has seen it. Look at Kyverno's pods (`kubectl -n kyverno get pods`, `kca cluster status`) and their logs; the policy itself is not at fault"
                ),
            ),
            D::PolicyPending { what, seconds } => t(
                format!(
                    "{what} が {seconds} 秒以内に Ready にならず、Kyverno は理由を示しませんでした。`kubectl describe` で status を、Kyverno の admission controller のログを見てください"
                ),
                format!(
                    "{what} did not become Ready within {seconds}s and Kyverno gave no reason; see `kubectl describe` for its status and Kyverno's admission controller logs"
                ),
            ),
            D::NoIdentity { what } => t(
                format!("{what} に apiVersion、kind、name のどれかがありません"),
                format!("{what} has no apiVersion, kind or name"),
            ),
            D::Accepted { what, warnings } => {
                let w = if warnings.is_empty() {
                    String::new()
                } else {
                    t(
                        format!(" (警告: {})", warnings.join("; ")),
                        format!(" (warnings: {})", warnings.join("; ")),
                    )
                };
                t(
                    format!("{what} は受け入れられます{w}"),
                    format!("{what} is accepted{w}"),
                )
            }
            D::AcceptedShouldReject { what } => t(
                format!("{what} は受け入れられますが、拒否されるはずです"),
                format!("{what} is accepted; it should be rejected"),
            ),
            D::Rejected { what, message } => t(
                format!("{what} は拒否されます。理由:\n{message}"),
                format!("{what} is rejected: {message}"),
            ),
            D::RejectedOtherReason { what, re, message } => {
                let w = if s.reveal { format!(" (/{re}/)") } else { String::new() };
                t(
                    format!("{what} は拒否されますが、期待する理由ではありません{w}。理由:\n{message}"),
                    format!("{what} is rejected, but not for the expected reason{w}: {message}"),
                )
            }
            D::RejectedAsExpected { what, message } => t(
                format!("{what} は拒否されます。理由:\n{message}"),
                format!("{what} is rejected: {message}"),
            ),
            D::NothingToCompare { source, path } => t(
                format!("{}: `{path}` と比べる出来事が起きていません", source.say(s)),
                format!("{}: nothing happened to compare `{path}` with", source.say(s)),
            ),
            D::Agrees { path, source } => t(
                format!("`{path}` は {} と一致します", source.say(s)),
                format!("`{path}` agrees with {}", source.say(s)),
            ),
            D::Disagrees { path, source, wrong } => {
                let w: Vec<String> = wrong
                    .iter()
                    .map(|w| match w {
                        Wrong::Empty { key } => {
                            t(format!("`{key}` が空です"), format!("`{key}` is empty"))
                        }
                        Wrong::NotWhatHappened { key, said } => t(
                            format!("`{key}: {said}` は起きたことと違います"),
                            format!("`{key}: {said}` is not what happened"),
                        ),
                    })
                    .collect();
                t(
                    format!("`{path}` が {} と一致しません: {}", source.say(s), w.join("、")),
                    format!("`{path}` does not agree with {}: {}", source.say(s), w.join("; ")),
                )
            }
            D::BeyondAllowed { excess } => excess
                .iter()
                .map(|e| {
                    t(
                        format!(
                            "{} rules[{}] ({}) が {} に {} を与えています ({}、{} 経由)。タスクが許す範囲を超えています",
                            e.object, e.index, e.rule, e.who, e.what, e.scope, e.via
                        ),
                        format!(
                            "{} rules[{}] ({}) gives {} {}, {} (via {}), beyond what the task allows",
                            e.object, e.index, e.rule, e.who, e.what, e.scope, e.via
                        ),
                    )
                })
                .collect::<Vec<_>>()
                .join(if s.lang == Lang::Ja { "\n" } else { "; " }),
            D::LacksNeeded {
                who,
                verb,
                resource,
                group,
                namespace,
            } => {
                let gr = if group.is_empty() { "core" } else { group };
                let (wj, we) = if namespace.is_empty() {
                    ("クラスター全体で".to_string(), "cluster-wide".to_string())
                } else {
                    (
                        format!("ネームスペース {namespace} で"),
                        format!("in namespace {namespace}"),
                    )
                };
                t(
                    format!("{who} は{wj} {resource} (グループ {gr}) を {verb} できません。タスクにはこの権限が必要です"),
                    format!("{who} cannot {verb} {resource} (group {gr}) {we}; the task needs it"),
                )
            }
            D::PrivilegeOk { who, from } => {
                let f = if from.is_empty() {
                    t("届くものなし".into(), "none reach it".into())
                } else {
                    from.join(", ")
                };
                t(
                    format!("{who} にはタスクに必要な権限があり、学習者のオブジェクト ({f}) は許された以上のものを与えていません"),
                    format!("{who} has what the task needs, and the learner's objects ({f}) give it nothing beyond what is allowed"),
                )
            }
            D::OfflineCannot { reason } => t(
                format!("オフラインでは判定できません: {reason}"),
                reason.clone(),
            ),
            D::NotServed { apis } => t(
                format!("クラスターが {} を提供していないので、このチェックはここでは判定できません", apis.join(", ")),
                format!("the cluster does not serve {}; this check cannot be judged on it", apis.join(", ")),
            ),
            D::KyvernoNotReady { down, webhooks } => {
                let mut why = Vec::new();
                if !down.is_empty() {
                    why.push(t(
                        format!("準備ができていないもの: {}", down.join(", ")),
                        format!("not ready: {}", down.join(", ")),
                    ));
                }
                if let Some((v, m)) = webhooks {
                    why.push(t(
                        format!("webhook: validating {v} 個、mutating {m} 個"),
                        format!("webhooks: {v} validating, {m} mutating"),
                    ));
                }
                t(
                    format!("このクラスターの Kyverno はこのチェックを判定できません ({})。`kca cluster status` を見てください", why.join("、")),
                    format!("Kyverno cannot judge this check in this cluster ({}); see `kca cluster status`", why.join("; ")),
                )
            }
            D::KyvernoUnknown { error } => t(
                format!("Kyverno の準備ができているか分かりません: {error}"),
                format!("cannot tell whether Kyverno is ready: {error}"),
            ),
            D::Cluster { error } => t(
                format!("クラスターとのやり取りに失敗しました:\n{error}"),
                error.clone(),
            ),
            D::NoThread { error } => t(
                format!("このチェックのスレッドを起動できません ({error})。プロセス数かメモリの上限 (ulimit -u、コンテナーの pids 上限) が低すぎます"),
                format!("kca could not start a thread for this check ({error}); a limit on processes or memory (ulimit -u, a container's pids limit) is too low"),
            ),
            D::Crashed { error } => match error {
                Some(e) => t(
                    format!("チェックが異常終了しました: {e}"),
                    format!("the check crashed: {e}"),
                ),
                None => t("チェックが異常終了しました".into(), "the check crashed".into()),
            },
            D::Content { error } => t(
                format!("ラボのファイルを読めません: {error}"),
                format!("the lab's files cannot be loaded: {error}"),
            ),
            D::Internal { what } => t(
                format!("kca の内部エラー: {what}"),
                format!("internal error: {what}"),
            ),
            D::Both(a, b) => {
                let (x, y) = (a.say(s), b.say(s));
                match (x.is_empty(), y.is_empty()) {
                    (true, _) => y,
                    (_, true) => x,
                    _ if y.starts_with(' ') || y.starts_with('(') => format!("{x}{y}"),
                    _ => t(format!("{x}\n{y}"), format!("{x}; {y}")),
                }
            }
        }
    }
}
