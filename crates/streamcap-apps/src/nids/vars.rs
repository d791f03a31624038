//! Rule variables (`$HOME_NET`, `$HTTP_PORTS`, ...). (Being written.)

/// Address and port variables.
#[derive(Clone, Debug, Default)]
pub struct Vars {}
