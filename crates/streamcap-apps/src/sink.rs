//! Where an application's records go: a [`Records`] sink, implemented for
//! a `Vec` (collect them), for `()` (drop them) and for closures
//! ([`FnRecords`]).

/// Takes an application's records one by one.
pub trait Records<R> {
    /// One record.
    fn record(&mut self, r: R);
}

impl<R> Records<R> for Vec<R> {
    fn record(&mut self, r: R) {
        self.push(r);
    }
}

/// Drops every record.
impl<R> Records<R> for () {
    fn record(&mut self, _: R) {}
}

/// A [`Records`] sink made of a closure.
pub struct FnRecords<F>(pub F);

impl<R, F: FnMut(R)> Records<R> for FnRecords<F> {
    fn record(&mut self, r: R) {
        (self.0)(r)
    }
}
