//! Where an application's records go: a [`Records`] sink, implemented for
//! a `Vec` (collect them), for `()` (drop them) and for closures
//! ([`FnRecords`]).

/// Takes an application's records one by one.
pub trait Records<R> {
    /// One record.
    fn record(&mut self, r: R);
    /// Whether records are wanted at all (an application need not build
    /// the records of a sink that drops them).
    fn active(&self) -> bool {
        true
    }
}

impl<R> Records<R> for Vec<R> {
    fn record(&mut self, r: R) {
        self.push(r);
    }
}

/// Drops every record.
impl<R> Records<R> for () {
    fn record(&mut self, _: R) {}
    fn active(&self) -> bool {
        false
    }
}

/// Records to a sink that may be absent (dropped when it is).
impl<R, K: Records<R>> Records<R> for Option<K> {
    fn record(&mut self, r: R) {
        if let Some(k) = self {
            k.record(r);
        }
    }
    fn active(&self) -> bool {
        self.as_ref().is_some_and(K::active)
    }
}

/// A [`Records`] sink made of a closure.
pub struct FnRecords<F>(pub F);

impl<R, F: FnMut(R)> Records<R> for FnRecords<F> {
    fn record(&mut self, r: R) {
        (self.0)(r)
    }
}
