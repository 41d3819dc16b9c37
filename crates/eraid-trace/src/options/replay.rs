//! The [`Replay`] iterator that applies [`TraceOptions`].

use super::{fold_request, TraceOptions};
use crate::{TraceError, TraceRequest};

/// A trace shaped by [`TraceOptions`]; build it with [`TraceOptions::apply`].
///
/// Looping: the first pass is kept in memory (32 bytes a request after
/// filtering) because a general reader cannot be rewound. Pass `k` repeats
/// the first pass with every arrival shifted by `k × period`, where
/// `period = span × n / (n − 1)` for a pass of `n` requests whose arrivals
/// span `span` ns: the gap across the seam then equals the mean gap, so a
/// looped trace keeps its average intensity. A pass of one request (or of
/// equal arrivals) uses a 1 ns period so time still advances.
///
/// Errors from the underlying stream are passed through unchanged and do not
/// count towards `max_requests`.
pub struct Replay<I> {
    inner: I,
    options: TraceOptions,
    rebase_origin_ns: Option<u64>,
    first_pass: Vec<TraceRequest>,
    first_pass_arrival_min_ns: u64,
    first_pass_arrival_max_ns: u64,
    inner_done: bool,
    pass: u64,
    replay_index: usize,
    period_ns: u64,
    emitted: u64,
    first_output_ns: Option<u64>,
    finished: bool,
}

impl<I> Replay<I>
where
    I: Iterator<Item = Result<TraceRequest, TraceError>>,
{
    pub(super) fn new(inner: I, options: TraceOptions) -> Self {
        Self {
            inner,
            options,
            rebase_origin_ns: None,
            first_pass: Vec::new(),
            first_pass_arrival_min_ns: u64::MAX,
            first_pass_arrival_max_ns: 0,
            inner_done: false,
            pass: 0,
            replay_index: 0,
            period_ns: 0,
            emitted: 0,
            first_output_ns: None,
            finished: false,
        }
    }

    fn loops(&self) -> bool {
        self.options.loop_count != 1
    }

    /// Steps 1-4 of the module docs; `None` drops the request.
    fn shape(&mut self, request: TraceRequest) -> Option<TraceRequest> {
        if let Some(devices) = &self.options.devices {
            if !devices.contains(&request.device) {
                return None;
            }
        }
        let mut request = request;
        if self.options.rebase_time {
            let origin = *self.rebase_origin_ns.get_or_insert(request.arrival_ns);
            request.arrival_ns = request.arrival_ns.saturating_sub(origin);
        }
        if self.options.time_scale != 1.0 {
            let scaled = (request.arrival_ns as f64 * self.options.time_scale).round();
            // `as` saturates at u64::MAX, which only an absurd trace reaches.
            request.arrival_ns = scaled as u64;
        }
        if let Some(capacity_bytes) = self.options.fold_capacity_bytes {
            request = fold_request(request, capacity_bytes);
        }
        Some(request)
    }

    /// The next request before limits, or an error from the source.
    fn next_unlimited(&mut self) -> Option<Result<TraceRequest, TraceError>> {
        while !self.inner_done {
            match self.inner.next() {
                None => {
                    self.inner_done = true;
                    self.start_second_pass();
                }
                Some(Err(error)) => return Some(Err(error)),
                Some(Ok(request)) => {
                    let Some(request) = self.shape(request) else {
                        continue;
                    };
                    if self.loops() {
                        self.first_pass.push(request);
                        self.first_pass_arrival_min_ns =
                            self.first_pass_arrival_min_ns.min(request.arrival_ns);
                        self.first_pass_arrival_max_ns =
                            self.first_pass_arrival_max_ns.max(request.arrival_ns);
                    }
                    return Some(Ok(request));
                }
            }
        }
        self.next_repeat().map(Ok)
    }

    fn start_second_pass(&mut self) {
        let n = self.first_pass.len() as u64;
        if n == 0 {
            return;
        }
        let span_ns = self.first_pass_arrival_max_ns - self.first_pass_arrival_min_ns;
        self.period_ns = if n > 1 {
            let gap_ns = span_ns / (n - 1);
            span_ns.saturating_add(gap_ns).max(1)
        } else {
            1
        };
        self.pass = 1;
    }

    fn next_repeat(&mut self) -> Option<TraceRequest> {
        if self.pass == 0 || self.first_pass.is_empty() {
            return None;
        }
        if self.replay_index == self.first_pass.len() {
            self.replay_index = 0;
            self.pass += 1;
        }
        if self.options.loop_count != 0 && self.pass >= u64::from(self.options.loop_count) {
            return None;
        }
        let mut request = self.first_pass[self.replay_index];
        self.replay_index += 1;
        let shift_ns = self.period_ns.saturating_mul(self.pass);
        request.arrival_ns = request.arrival_ns.saturating_add(shift_ns);
        Some(request)
    }
}

impl<I> Iterator for Replay<I>
where
    I: Iterator<Item = Result<TraceRequest, TraceError>>,
{
    type Item = Result<TraceRequest, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        if self
            .options
            .max_requests
            .is_some_and(|max| self.emitted >= max)
        {
            self.finished = true;
            return None;
        }
        let request = match self.next_unlimited()? {
            Ok(request) => request,
            Err(error) => return Some(Err(error)),
        };
        let first_ns = *self.first_output_ns.get_or_insert(request.arrival_ns);
        if let Some(max_duration_ns) = self.options.max_duration_ns {
            if request.arrival_ns.saturating_sub(first_ns) >= max_duration_ns {
                self.finished = true;
                return None;
            }
        }
        self.emitted += 1;
        Some(Ok(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn request(arrival_ns: u64, device: u32) -> Result<TraceRequest, TraceError> {
        Ok(TraceRequest {
            arrival_ns,
            device,
            offset_bytes: 4096 * u64::from(device),
            len_bytes: 4096,
            is_read: true,
        })
    }

    fn run(options: TraceOptions, input: Vec<Result<TraceRequest, TraceError>>) -> Vec<(u64, u32)> {
        options
            .apply(input)
            .unwrap()
            .map(|r| r.map(|r| (r.arrival_ns, r.device)).unwrap())
            .collect()
    }

    #[test]
    fn default_options_change_nothing() {
        let input = vec![request(5, 0), request(9, 1)];
        assert_eq!(run(TraceOptions::default(), input), vec![(5, 0), (9, 1)]);
    }

    #[test]
    fn selects_rebases_and_scales() {
        let options = TraceOptions {
            devices: Some(BTreeSet::from([1, 2])),
            rebase_time: true,
            time_scale: 0.5,
            ..TraceOptions::default()
        };
        let input = vec![
            request(100, 0),
            request(200, 1),
            request(300, 2),
            request(401, 1),
        ];
        assert_eq!(run(options, input), vec![(0, 1), (50, 2), (101, 1)]);
    }

    #[test]
    fn loops_with_the_mean_gap_across_the_seam() {
        let options = TraceOptions {
            loop_count: 3,
            ..TraceOptions::default()
        };
        let input = vec![request(10, 0), request(20, 1), request(40, 0)];
        // span 30, 3 requests: mean gap 15, period 45.
        assert_eq!(
            run(options, input),
            vec![
                (10, 0),
                (20, 1),
                (40, 0),
                (55, 0),
                (65, 1),
                (85, 0),
                (100, 0),
                (110, 1),
                (130, 0)
            ]
        );
    }

    #[test]
    fn limits_count_and_duration() {
        let input = || (0..10).map(|i| request(i * 100, 0)).collect::<Vec<_>>();
        let by_count = TraceOptions {
            max_requests: Some(4),
            ..TraceOptions::default()
        };
        assert_eq!(run(by_count, input()).len(), 4);
        let by_time = TraceOptions {
            max_duration_ns: Some(250),
            ..TraceOptions::default()
        };
        assert_eq!(run(by_time, input()).len(), 3);
        let forever = TraceOptions {
            loop_count: 0,
            max_requests: Some(25),
            ..TraceOptions::default()
        };
        let looped = run(forever, input());
        assert_eq!(looped.len(), 25);
        assert!(looped.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn errors_pass_through_without_counting() {
        let error = TraceError::Malformed {
            source_name: "t".into(),
            line_number: 2,
            message: "bad".into(),
        };
        let input = vec![request(1, 0), Err(error), request(2, 0), request(3, 0)];
        let options = TraceOptions {
            max_requests: Some(2),
            ..TraceOptions::default()
        };
        let out: Vec<_> = options.apply(input).unwrap().collect();
        assert_eq!(out.len(), 3);
        assert!(out[1].is_err());
    }

    #[test]
    fn nonsense_settings_are_rejected() {
        for options in [
            TraceOptions {
                time_scale: 0.0,
                ..TraceOptions::default()
            },
            TraceOptions {
                time_scale: f64::NAN,
                ..TraceOptions::default()
            },
            TraceOptions {
                fold_capacity_bytes: Some(100),
                ..TraceOptions::default()
            },
            TraceOptions {
                loop_count: 0,
                ..TraceOptions::default()
            },
        ] {
            assert!(options.validate().is_err(), "{options:?}");
        }
    }
}
