//! Exit codes: kca's contract with scripts, CI systems and LMS graders. Written down once,
//! here and in README.md.

/// How a kca run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success: the command did what was asked; every check or quiz passed.
    Success = 0,
    /// Ran fine, but did not pass: a quiz below its pass mark, a failing check, a policy
    /// rule that failed, `can-i` answering no.
    NotPassed = 1,
    /// Usage or content error: bad arguments, a lab or quiz file that does not validate.
    Usage = 2,
    /// Environment error: cluster unreachable, a tool missing, a timeout. Never the
    /// learner's fault.
    Environment = 3,
}

impl Exit {
    pub fn code(self) -> u8 {
        self as u8
    }
}
