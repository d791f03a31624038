//! Where IPFIX messages go: a collector over UDP (paced, its send errors
//! counted) or TCP (a stream of messages; an error stops the run), or a
//! file (RFC 5655: the messages back to back).

use super::options::{Rate, Target};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

/// The largest UDP message: within a 1,500-byte Ethernet MTU with IPv6 and
/// UDP headers (RFC 7011 §10.3.3: messages must not be fragmented).
pub const UDP_MESSAGE: usize = 1400;

/// The largest message over TCP and in a file (the protocol's maximum).
pub const STREAM_MESSAGE: usize = 65_535;

/// How long a TCP connection to the collector may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Messages a paced export may send back to back before it waits.
const BURST: f64 = 32.0;

/// A bound on the send rate (GCRA, the "virtual scheduling" form): each
/// message is due `cost / rate` after the previous one; a sender more than
/// [`BURST`] messages ahead sleeps.
#[derive(Debug)]
pub struct Pacer {
    rate: Rate,
    /// When the next message is due.
    due: Option<Instant>,
    /// Time spent waiting.
    pub waited: Duration,
}

impl Pacer {
    /// A pacer at `rate`.
    pub fn new(rate: Rate) -> Pacer {
        Pacer {
            rate,
            due: None,
            waited: Duration::ZERO,
        }
    }

    /// Seconds a message of `len` bytes takes of the rate.
    fn cost(&self, len: usize) -> f64 {
        match self.rate {
            Rate::Messages(n) => 1.0 / n,
            Rate::Bytes(n) => len as f64 / n,
            Rate::Unlimited => 0.0,
        }
    }

    /// The slack: how far ahead a sender may be.
    fn slack(&self) -> f64 {
        match self.rate {
            Rate::Messages(n) => BURST / n,
            Rate::Bytes(n) => BURST * super::transport::UDP_MESSAGE as f64 / n,
            Rate::Unlimited => 0.0,
        }
    }

    /// Waits, if needed, before a message of `len` bytes goes out.
    pub fn wait(&mut self, len: usize) {
        if self.rate == Rate::Unlimited {
            return;
        }
        let now = Instant::now();
        let due = self.due.map_or(now, |d| d.max(now));
        let next = due + Duration::from_secs_f64(self.cost(len));
        let ahead = next.saturating_duration_since(now);
        let slack = Duration::from_secs_f64(self.slack());
        if ahead > slack {
            let sleep = ahead - slack;
            std::thread::sleep(sleep);
            self.waited += sleep;
        }
        self.due = Some(next);
    }

    /// The rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }
}

/// An open destination of IPFIX messages.
#[derive(Debug)]
pub enum Transport {
    /// A connected UDP socket, paced.
    Udp {
        socket: UdpSocket,
        pacer: Pacer,
        name: String,
        /// The socket's send buffer, as the kernel set it.
        sndbuf: usize,
    },
    /// A TCP connection.
    Tcp {
        stream: BufWriter<TcpStream>,
        name: String,
    },
    /// A file.
    File { file: BufWriter<File>, name: String },
}

/// The first address `addr` resolves to.
fn resolve(addr: &str, name: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("{name}: cannot resolve {addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{name}: {addr} resolves to no address"))
}

/// The socket's SO_SNDBUF, after asking for `bytes` if given.
fn sndbuf(socket: &UdpSocket, bytes: Option<u64>) -> io::Result<usize> {
    let s = socket2::SockRef::from(socket);
    if let Some(b) = bytes {
        // The kernel takes an int (and caps it at net.core.wmem_max).
        s.set_send_buffer_size(b.min(i32::MAX as u64) as usize)?;
    }
    s.send_buffer_size()
}

impl Transport {
    /// Opens the way to a collector: a UDP socket connected to it (so that
    /// an ICMP error comes back as a send error), or a TCP connection.
    pub fn connect(
        target: &Target,
        rate: Rate,
        sndbuf_bytes: Option<u64>,
    ) -> Result<Transport, String> {
        let name = format!("ipfix {target}");
        let addr = resolve(&target.addr, &name)?;
        if target.tcp {
            let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
                .map_err(|e| format!("{name}: cannot connect to the IPFIX collector: {e}"))?;
            return Ok(Transport::Tcp {
                stream: BufWriter::with_capacity(1 << 16, stream),
                name,
            });
        }
        let local: SocketAddr = if addr.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            ([0u16; 8], 0).into()
        };
        let socket = UdpSocket::bind(local)
            .and_then(|s| s.connect(addr).map(|()| s))
            .map_err(|e| format!("{name}: cannot open a UDP socket to the collector: {e}"))?;
        let sndbuf = sndbuf(&socket, sndbuf_bytes)
            .map_err(|e| format!("{name}: cannot set the send buffer (--ipfix-sndbuf): {e}"))?;
        Ok(Transport::Udp {
            socket,
            pacer: Pacer::new(rate),
            name,
            sndbuf,
        })
    }

    /// Creates (or truncates) `path` for an IPFIX file.
    pub fn file(path: &Path) -> Result<Transport, String> {
        let name = format!("ipfix file {}", path.display());
        let f =
            File::create(path).map_err(|e| format!("{}: cannot create: {e}", path.display()))?;
        Ok(Transport::File {
            file: BufWriter::with_capacity(1 << 16, f),
            name,
        })
    }

    /// The name in messages and the summary: `ipfix udp://HOST:PORT`.
    pub fn name(&self) -> &str {
        match self {
            Transport::Udp { name, .. }
            | Transport::Tcp { name, .. }
            | Transport::File { name, .. } => name,
        }
    }

    /// Whether messages may be lost (UDP): the templates are then sent
    /// again from time to time.
    pub fn is_lossy(&self) -> bool {
        matches!(self, Transport::Udp { .. })
    }

    /// The largest message for this transport.
    pub fn max_message(&self) -> usize {
        if self.is_lossy() {
            UDP_MESSAGE
        } else {
            STREAM_MESSAGE
        }
    }

    /// Sends one message. UDP: waits for the pace, and returns a send
    /// error as `Ok(false)` (the message is lost; the caller counts it).
    /// TCP, file: an error is returned.
    pub fn send(&mut self, msg: &[u8]) -> io::Result<bool> {
        match self {
            Transport::Udp { socket, pacer, .. } => {
                pacer.wait(msg.len());
                Ok(socket.send(msg).is_ok())
            }
            Transport::Tcp { stream, .. } => stream.write_all(msg).map(|()| true),
            Transport::File { file, .. } => file.write_all(msg).map(|()| true),
        }
    }

    /// Pushes out what is buffered (TCP, file).
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Udp { .. } => Ok(()),
            Transport::Tcp { stream, .. } => stream.flush(),
            Transport::File { file, .. } => file.flush(),
        }
    }

    /// Flushes and closes: a TCP connection is shut down (the collector
    /// sees the end of the stream), a file synced.
    pub fn close(&mut self) -> io::Result<()> {
        self.flush()?;
        match self {
            Transport::Udp { .. } => Ok(()),
            Transport::Tcp { stream, .. } => stream.get_ref().shutdown(std::net::Shutdown::Write),
            // A regular file only: a device (/dev/null) or a pipe cannot be
            // synced (EINVAL).
            Transport::File { file, .. } => match file.get_ref().metadata() {
                Ok(m) if m.is_file() => file.get_ref().sync_all(),
                _ => Ok(()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pace of 2,000 messages a second: 200 messages (after the first
    /// burst of 32) take about 84 ms.
    #[test]
    fn pacing_bounds_the_rate() {
        let mut p = Pacer::new(Rate::Messages(2000.0));
        let start = Instant::now();
        for _ in 0..200 {
            p.wait(1400);
        }
        let took = start.elapsed().as_secs_f64();
        assert!(took >= 0.080, "{took}");
        // (Less than the time taken when a sleep overran.)
        assert!(p.waited.as_secs_f64() >= 0.040, "{:?}", p.waited);
        let mut free = Pacer::new(Rate::Unlimited);
        let start = Instant::now();
        for _ in 0..10_000 {
            free.wait(1400);
        }
        assert!(start.elapsed() < Duration::from_millis(50));
    }

    #[test]
    fn unreachable_collectors_are_reported() {
        let t = Target {
            tcp: true,
            // Port 1 on the loopback: nothing listens (connection refused).
            addr: "127.0.0.1:1".into(),
        };
        let e = Transport::connect(&t, Rate::Unlimited, None).expect_err("refused");
        assert!(e.contains("ipfix tcp://127.0.0.1:1: cannot connect"), "{e}");
        let e = Transport::file(Path::new("/nonexistent/dir/x.ipfix")).expect_err("no dir");
        assert!(e.contains("cannot create"), "{e}");
        // A device takes the messages and closes without a sync.
        let mut null = Transport::file(Path::new("/dev/null")).expect("opens");
        assert_eq!(null.send(&[0; 100]).ok(), Some(true));
        assert!(null.close().is_ok());
    }
}
