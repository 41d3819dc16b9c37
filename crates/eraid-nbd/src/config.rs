//! Server limits. Every per-connection resource is bounded by one of these.

use std::time::Duration;

use crate::tls::TlsPolicy;

/// Limits and knobs of a `Server`. `Default` gives the values the CLI uses.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest READ or WRITE accepted (NBD_INFO_BLOCK_SIZE maximum).
    pub max_request_bytes: u32,
    /// Alignment of every offset and length (NBD_INFO_BLOCK_SIZE minimum);
    /// a power of two.
    pub min_block_bytes: u32,
    /// Requests a connection may have submitted but not yet answered;
    /// the connection stops reading while at this bound.
    pub max_in_flight_requests: usize,
    /// Payload and read bytes a connection may have in flight, so 64
    /// maximal writes cannot pin 2 GiB.
    pub max_in_flight_bytes: u64,
    /// Connections in transmission at once; a client that asks to enter
    /// transmission beyond this is refused (NBD_REP_ERR_POLICY after GO,
    /// a close after EXPORT_NAME).
    pub max_connections: usize,
    /// Connections still in the handshake at once, counted apart from
    /// `max_connections` so that clients that connect and say nothing
    /// cannot starve established work: when the reserve is full, a new
    /// connection displaces the oldest handshake.
    pub handshake_reserve: usize,
    /// A client must reach transmission within this long after connecting.
    pub handshake_timeout: Duration,
    /// A WRITE longer than `max_request_bytes` but at most this long is
    /// read and rejected with EINVAL; a longer one closes the connection
    /// (reading it could be an unbounded wait on garbage).
    pub oversize_write_drain_bytes_max: u32,
    /// Whether to advertise NBD_FLAG_CAN_MULTI_CONN (needs a Flush that
    /// covers every connection's completed writes, as `Export` promises).
    pub multi_conn: bool,
    /// A reply (header and data) must be sent within this long; the clock
    /// does not restart when the client takes a few bytes, so a client
    /// that reads slowly or not at all is dropped.
    pub send_timeout: Duration,
    /// From the stop request to every connection closed, whatever clients
    /// do: half of it is granted to finish messages already begun, then
    /// what is still open is cut.
    pub shutdown_timeout: Duration,
    /// Bytes of replies a Unix socket may queue for a client that has not
    /// read them yet (0: the kernel's default). Bounded by the kernel's
    /// `net.core.wmem_max` and, like every send, by `send_timeout`.
    pub unix_send_buffer_bytes: usize,
    /// TLS through NBD_OPT_STARTTLS (None: plaintext only, STARTTLS gets
    /// NBD_REP_ERR_UNSUP).
    pub tls: Option<TlsPolicy>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_request_bytes: 32 * 1024 * 1024,
            min_block_bytes: 512,
            max_in_flight_requests: 64,
            max_in_flight_bytes: 128 * 1024 * 1024,
            max_connections: 64,
            handshake_reserve: 16,
            handshake_timeout: Duration::from_secs(10),
            oversize_write_drain_bytes_max: 64 * 1024 * 1024,
            multi_conn: true,
            send_timeout: Duration::from_secs(30),
            shutdown_timeout: Duration::from_secs(10),
            // A queue depth of 32 reads of 128 KiB (see Stream::widen_send_buffer).
            unix_send_buffer_bytes: 4 * 1024 * 1024,
            tls: None,
        }
    }
}

impl ServerConfig {
    /// Checks the constraints NBD_INFO_BLOCK_SIZE puts on the sizes.
    pub fn validate(&self) -> Result<(), String> {
        if !self.min_block_bytes.is_power_of_two() || self.min_block_bytes > 64 * 1024 {
            return Err(format!(
                "min_block_bytes {} must be a power of two <= 64 KiB",
                self.min_block_bytes
            ));
        }
        if self.max_request_bytes < self.min_block_bytes
            || self.max_request_bytes & (self.min_block_bytes - 1) != 0
        {
            return Err(format!(
                "max_request_bytes {} must be a multiple of min_block_bytes {}",
                self.max_request_bytes, self.min_block_bytes
            ));
        }
        if self.max_in_flight_requests == 0
            || self.max_connections == 0
            || self.handshake_reserve == 0
        {
            return Err(
                "max_in_flight_requests, max_connections and handshake_reserve must be > 0".into(),
            );
        }
        for (name, value) in [
            ("handshake_timeout", self.handshake_timeout),
            ("send_timeout", self.send_timeout),
            ("shutdown_timeout", self.shutdown_timeout),
        ] {
            if value.is_zero() {
                return Err(format!("{name} must be longer than 0"));
            }
        }
        if self.max_in_flight_bytes < u64::from(self.max_request_bytes) {
            return Err("max_in_flight_bytes must hold at least one maximal request".into());
        }
        Ok(())
    }

    /// How long a reader or writer may go on with a message already begun
    /// once the server stops; what is open after `shutdown_timeout` is cut.
    pub fn stop_grace(&self) -> Duration {
        self.shutdown_timeout / 2
    }

    /// The preferred block size to advertise for an export's wish: the
    /// largest power of two dividing it, clamped to [min, max] (a stripe of
    /// three 64 KiB chunks advertises 64 KiB).
    pub fn preferred_block_bytes(&self, export_preferred_bytes: u32) -> u32 {
        let power_of_two = if export_preferred_bytes == 0 {
            self.min_block_bytes
        } else {
            1u32 << export_preferred_bytes.trailing_zeros()
        };
        let max_power_of_two = 1u32 << (31 - self.max_request_bytes.leading_zeros());
        power_of_two.clamp(self.min_block_bytes, max_power_of_two)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid() {
        ServerConfig::default().validate().unwrap();
    }

    #[test]
    fn rejects_bad_sizes() {
        let bad_min = ServerConfig {
            min_block_bytes: 768,
            ..ServerConfig::default()
        };
        assert!(bad_min.validate().is_err());
        let bad_max = ServerConfig {
            max_request_bytes: 1000,
            ..ServerConfig::default()
        };
        assert!(bad_max.validate().is_err());
    }

    #[test]
    fn preferred_block_is_a_power_of_two_in_range() {
        let config = ServerConfig::default();
        assert_eq!(config.preferred_block_bytes(64 * 1024), 64 * 1024);
        assert_eq!(config.preferred_block_bytes(3 * 64 * 1024), 64 * 1024);
        assert_eq!(config.preferred_block_bytes(0), 512);
        assert_eq!(config.preferred_block_bytes(256), 512);
        assert_eq!(config.preferred_block_bytes(1 << 31), 32 * 1024 * 1024);
    }
}
