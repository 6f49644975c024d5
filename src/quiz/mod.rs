//! Quizzes: grading, sessions (interactive or piped), review scheduling.

pub mod command;
