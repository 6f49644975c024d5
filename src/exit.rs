//! Exit codes: kca's contract with scripts, CI systems and LMS graders. Written down once,
//! here and in README.md.

/// How a kca run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success: the command did what was asked; every check or quiz passed.
    Success,
    /// Ran fine, but did not pass: a quiz below its pass mark, a failing check, a policy
    /// rule that failed, `can-i` answering no.
    NotPassed,
    /// Usage or content error: bad arguments, a lab or quiz file that does not validate.
    Usage,
    /// Environment error: cluster unreachable, a tool missing, a timeout. Never the
    /// learner's fault.
    Environment,
    /// A code the user chose for warnings (`kca policy apply --warn-exit-code N`, as
    /// `kyverno apply` takes it).
    Chosen(u8),
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::NotPassed => 1,
            Exit::Usage => 2,
            Exit::Environment => 3,
            Exit::Chosen(n) => n,
        }
    }
}
