//! Seek time as a function of distance in cylinders.

/// Seek-time curve. Zero distance always costs zero (head switches and write
/// settling are added by the mechanics, not here).
#[derive(Debug, Clone, PartialEq)]
pub enum SeekCurve {
    /// Measured (distance, ms) points, ascending; linear interpolation
    /// between points and linear extrapolation past the last one, as DiskSim's
    /// "extracted" seek type does.
    Table(Vec<(u32, f64)>),
    /// `a + b * sqrt(d) + c * d` ms for d >= 1 cylinders (Ruemmler and
    /// Wilkes' square-root-then-linear shape folded into one formula).
    Fitted { a_ms: f64, b_ms: f64, c_ms: f64 },
    /// Ruemmler and Wilkes' two-piece curve (DiskSim's `hpl` and
    /// `hplplus10` seek types).
    Hpl(HplSeek),
}

/// `v2 + v3 * sqrt(d)` ms below `v1` cylinders, `v4 + v5 * d` ms from there
/// on ("HPL seek equation values" V1..V5). A one-cylinder seek takes
/// `single_cylinder_ms` when given (V6, -1 meaning none), and the
/// `hplplus10` type takes distances 1 to 10 from `first_ten_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct HplSeek {
    pub short_below_cyls: u32,
    pub short_base_ms: f64,
    pub short_sqrt_ms: f64,
    pub long_base_ms: f64,
    pub long_per_cyl_ms: f64,
    pub single_cylinder_ms: Option<f64>,
    pub first_ten_ms: Option<[f64; 10]>,
}

impl HplSeek {
    fn seek_time_ms(&self, d: u32) -> f64 {
        if let Some(t) = self.first_ten_ms {
            if (1..=10).contains(&d) {
                return t[d as usize - 1];
            }
        } else if let (1, Some(t)) = (d, self.single_cylinder_ms) {
            return t;
        }
        if d < self.short_below_cyls {
            self.short_base_ms + self.short_sqrt_ms * f64::from(d).sqrt()
        } else {
            self.long_base_ms + self.long_per_cyl_ms * f64::from(d)
        }
    }
}

impl SeekCurve {
    /// Fits the three-parameter curve through datasheet figures: the
    /// track-to-track seek (d = 1), the average seek (taken at d = N/3, the
    /// mean distance of uniformly random seeks) and the full stroke (d = N-1).
    pub fn fit(
        track_to_track_ms: f64,
        average_ms: f64,
        full_stroke_ms: f64,
        cylinders: u32,
    ) -> Self {
        let n = f64::from(cylinders.max(4));
        let pts = [
            (1.0, track_to_track_ms),
            (n / 3.0, average_ms),
            (n - 1.0, full_stroke_ms),
        ];
        // Solve the 3x3 system [1 sqrt(d) d] * [a b c]^T = t by Cramer's rule.
        let row = |d: f64| [1.0, d.sqrt(), d];
        let m = [row(pts[0].0), row(pts[1].0), row(pts[2].0)];
        let t = [pts[0].1, pts[1].1, pts[2].1];
        let det3 = |m: [[f64; 3]; 3]| {
            m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
                - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
                + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        };
        let d = det3(m);
        let col = |k: usize| {
            let mut mk = m;
            for (r, row) in mk.iter_mut().enumerate() {
                row[k] = t[r];
            }
            det3(mk) / d
        };
        SeekCurve::Fitted {
            a_ms: col(0),
            b_ms: col(1),
            c_ms: col(2),
        }
    }

    pub fn seek_time_ms(&self, distance_cyls: u32) -> f64 {
        if distance_cyls == 0 {
            return 0.0;
        }
        match self {
            SeekCurve::Fitted { a_ms, b_ms, c_ms } => {
                let d = f64::from(distance_cyls);
                (a_ms + b_ms * d.sqrt() + c_ms * d).max(0.0)
            }
            SeekCurve::Table(points) => interpolate(points, distance_cyls),
            SeekCurve::Hpl(h) => h.seek_time_ms(distance_cyls).max(0.0),
        }
    }
}

fn interpolate(points: &[(u32, f64)], d: u32) -> f64 {
    match points {
        [] => 0.0,
        [(_, t)] => *t,
        _ => {
            // First point at or beyond d; past the end, extrapolate from the last two.
            let i = points
                .partition_point(|p| p.0 < d)
                .clamp(1, points.len() - 1);
            let (d1, t1) = points[i - 1];
            let (d2, t2) = points[i];
            if d == d2 {
                return t2;
            }
            if d <= d1 {
                return t1;
            }
            let span = f64::from(d2) - f64::from(d1);
            (t1 + (f64::from(d) - f64::from(d1)) * (t2 - t1) / span).max(0.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_interpolates_and_extrapolates() {
        let c = SeekCurve::Table(vec![(1, 1.0), (3, 2.0), (5, 2.5)]);
        assert_eq!(c.seek_time_ms(0), 0.0);
        assert_eq!(c.seek_time_ms(1), 1.0);
        assert!((c.seek_time_ms(2) - 1.5).abs() < 1e-12);
        assert!((c.seek_time_ms(7) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn hpl_pieces_and_first_ten() {
        let mut h = HplSeek {
            short_below_cyls: 300,
            short_base_ms: 3.0,
            short_sqrt_ms: 0.5,
            long_base_ms: 8.0,
            long_per_cyl_ms: 0.01,
            single_cylinder_ms: Some(1.5),
            first_ten_ms: None,
        };
        let c = SeekCurve::Hpl(h.clone());
        assert_eq!(c.seek_time_ms(0), 0.0);
        assert_eq!(c.seek_time_ms(1), 1.5);
        assert!((c.seek_time_ms(4) - 4.0).abs() < 1e-12);
        assert!((c.seek_time_ms(300) - 11.0).abs() < 1e-12);
        h.first_ten_ms = Some([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]);
        let c = SeekCurve::Hpl(h);
        assert_eq!(c.seek_time_ms(1), 0.1);
        assert_eq!(c.seek_time_ms(10), 1.0);
        assert!((c.seek_time_ms(16) - 5.0).abs() < 1e-12);
    }

    #[test]
    fn fit_passes_through_its_points() {
        let c = SeekCurve::fit(0.2, 3.5, 7.4, 90_000);
        assert!((c.seek_time_ms(1) - 0.2).abs() < 1e-9);
        assert!((c.seek_time_ms(30_000) - 3.5).abs() < 1e-9);
        assert!((c.seek_time_ms(89_999) - 7.4).abs() < 1e-9);
        let mut prev = 0.0;
        for d in (1..90_000).step_by(97) {
            let t = c.seek_time_ms(d);
            assert!(t >= prev, "fitted curve must grow with distance");
            prev = t;
        }
    }
}
