//! The library's error type: typed where a caller branches or a hint helps; each keeps
//! its cause (`source`) so the printer in `ui` can show `caused by:` for every link.

use crate::diag::Diagnostic;
use crate::exit::Exit;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A cause kept below a message.
pub type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Content (lab, quiz) or input files with problems; every problem is listed.
    #[error("{} problem(s) in content", crate::diag::count(.0))]
    Content(Vec<Diagnostic>),
    /// The user asked for something that cannot be: an unknown quiz id, a bad flag mix.
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
        #[source]
        source: Option<Source>,
    },
    /// The environment is broken: cluster unreachable, a tool missing, a timeout.
    #[error("{message}")]
    Environment {
        message: String,
        hint: Option<String>,
        #[source]
        source: Option<Source>,
    },
    /// Anything else, with its chain of causes.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl Error {
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Usage {
            message: message.into(),
            hint: Some(hint.into()),
            source: None,
        }
    }

    pub fn environment(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Environment {
            message: message.into(),
            hint: Some(hint.into()),
            source: None,
        }
    }

    /// A usage error that keeps what caused it.
    pub fn usage_with(
        message: impl Into<String>,
        hint: impl Into<String>,
        source: impl Into<anyhow::Error>,
    ) -> Self {
        Error::Usage {
            message: message.into(),
            hint: Some(hint.into()),
            source: Some(source.into().into()),
        }
    }

    /// An environment error that keeps what caused it.
    pub fn environment_with(
        message: impl Into<String>,
        hint: impl Into<String>,
        source: impl Into<anyhow::Error>,
    ) -> Self {
        Error::Environment {
            message: message.into(),
            hint: Some(hint.into()),
            source: Some(source.into().into()),
        }
    }

    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::Usage { hint, .. } | Error::Environment { hint, .. } => hint.as_deref(),
            Error::Content(_) => Some("fix the problems above, then run the command again"),
            Error::Other(_) => None,
        }
    }

    pub fn exit(&self) -> Exit {
        match self {
            Error::Content(_) | Error::Usage { .. } => Exit::Usage,
            Error::Environment { .. } => Exit::Environment,
            Error::Other(_) => Exit::Environment,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Other(e.into())
    }
}
