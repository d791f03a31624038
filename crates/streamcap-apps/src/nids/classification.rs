//! Classtypes: a rule's `classtype` gives its alert category and default
//! priority. (Being written.)

/// One classtype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassType {
    /// Short name (`web-application-attack`).
    pub name: String,
    /// Description, the EVE alert's `category`.
    pub description: String,
    /// Default priority (severity).
    pub priority: u8,
}

/// The known classtypes.
#[derive(Clone, Debug, Default)]
pub struct Classifications {}

impl Classifications {
    /// The classtype `name`.
    pub fn get(&self, name: &str) -> Option<&ClassType> {
        let _ = name;
        None
    }
}
