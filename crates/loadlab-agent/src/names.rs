//! The names a client gives itself (`client`, `run`): shown in `hello` and in a 409 to other
//! clients, and printed on their terminals, so bounded and printable. Checked when a session
//! opens and when a load starts.

use crate::reply::Refusal;

/// The most bytes of a client's or a run's name: shown in `hello` and in a 409 to others.
pub(crate) const MAX_NAME_BYTES: usize = 128;

/// A name a client gives itself (`client`, `run`): at most [`MAX_NAME_BYTES`], no control
/// characters (it is shown to other clients, and printed on their terminals).
pub(crate) fn check_name(field: &str, value: &str) -> Result<(), Refusal> {
    if value.len() > MAX_NAME_BYTES {
        return Err(Refusal::field(
            field,
            format!(
                "{field} is {} bytes long, more than {MAX_NAME_BYTES}: give a shorter name",
                value.len()
            ),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Refusal::field(
            field,
            format!(
                "{field} holds control characters (escapes, line breaks): give a name of \
                 printable characters"
            ),
        ));
    }
    Ok(())
}
