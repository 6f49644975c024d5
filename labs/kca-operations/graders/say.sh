# 採点スクリプトの一行を、学習者の言語で(kca が渡す KCA_LANG、なければ LANG)。
# A grader's line in the learner's language: KCA_LANG (set by kca for a lab's command
# checks), else LANG (en* is English), else Japanese. One language per line and screen.
#   usage: say 'japanese' 'english'   (sourced by the graders)
say() {
  case "${KCA_LANG:-${LANG:-ja}}" in
    en*) printf '%s\n' "$2" ;;
    *) printf '%s\n' "$1" ;;
  esac
}
