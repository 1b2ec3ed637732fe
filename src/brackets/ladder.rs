//! Settlement brackets: `<=79,80-81,82-83,84-85,86-87,>=88` (Kalshi's daily-temperature
//! ladder: two open tails around 2-degree brackets), parsed, checked and labelled.

use std::fmt;
use std::str::FromStr;

use super::BracketsError;

/// Whole values from `lo` to `hi`, both included; `None` is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bracket {
    pub lo: Option<i32>,
    pub hi: Option<i32>,
}

impl Bracket {
    pub fn contains(&self, v: i32) -> bool {
        self.lo.is_none_or(|lo| v >= lo) && self.hi.is_none_or(|hi| v <= hi)
    }
}

impl fmt::Display for Bracket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.lo, self.hi) {
            (None, Some(hi)) => write!(f, "<={hi}"),
            (Some(lo), None) => write!(f, ">={lo}"),
            (Some(lo), Some(hi)) if lo == hi => write!(f, "{lo}"),
            (Some(lo), Some(hi)) => write!(f, "{lo}-{hi}"),
            (None, None) => write!(f, "any"),
        }
    }
}

/// Brackets covering every whole value once, lowest first: an open lower tail, contiguous
/// closed brackets, an open upper tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder(Vec<Bracket>);

/// Brackets a ladder holds at most (a request's list is bounded).
pub const MAX_BRACKETS: usize = 64;

impl Ladder {
    pub fn brackets(&self) -> &[Bracket] {
        &self.0
    }

    /// `inner` brackets `width` values wide around `median`, the lowest starting on a
    /// multiple of `width` (Kalshi's 80-81, 82-83 ...), and the two tails.
    pub fn around(median: i32, width: i32, inner: i32) -> Ladder {
        let width = width.max(1);
        let inner = inner.max(1);
        let start = (median - width * inner / 2).div_euclid(width) * width;
        let mut b = vec![Bracket { lo: None, hi: Some(start - 1) }];
        b.extend((0..inner).map(|i| Bracket { lo: Some(start + i * width), hi: Some(start + (i + 1) * width - 1) }));
        b.push(Bracket { lo: Some(start + inner * width), hi: None });
        Ladder(b)
    }
}

impl fmt::Display for Ladder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let labels: Vec<String> = self.0.iter().map(Bracket::to_string).collect();
        f.write_str(&labels.join(","))
    }
}

impl FromStr for Ladder {
    type Err = BracketsError;

    /// `<=79,80-81,...,>=88`; a single value (`80`) is a bracket of one; values may be
    /// negative (`<=-3,-2--1,>=0`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: String| BracketsError::Invalid(format!("brackets `{s}`: {why}"));
        let int = |t: &str| t.trim().parse::<i32>().map_err(|_| bad(format!("`{t}` is not a whole number")));
        let mut out = Vec::new();
        for token in s.split(',').map(str::trim) {
            let b = if let Some(v) = token.strip_prefix("<=") {
                Bracket { lo: None, hi: Some(int(v)?) }
            } else if let Some(v) = token.strip_prefix(">=") {
                Bracket { lo: Some(int(v)?), hi: None }
            } else {
                // The range's dash is the first one after the first character (a sign).
                match token.char_indices().skip(1).find(|&(_, c)| c == '-') {
                    Some((i, _)) => Bracket { lo: Some(int(&token[..i])?), hi: Some(int(&token[i + 1..])?) },
                    None => {
                        let v = int(token)?;
                        Bracket { lo: Some(v), hi: Some(v) }
                    }
                }
            };
            out.push(b);
        }
        if out.len() < 2 || out.len() > MAX_BRACKETS {
            return Err(bad(format!("a ladder has 2 to {MAX_BRACKETS} brackets")));
        }
        let (first, last) = (out[0], out[out.len() - 1]);
        if first.lo.is_some() || last.hi.is_some() {
            return Err(bad("it must start with `<=N` and end with `>=M`, so every value is in one bracket".into()));
        }
        for w in out.windows(2) {
            let (Some(hi), Some(lo)) = (w[0].hi, w[1].lo) else {
                return Err(bad("only the first bracket is open below and only the last above".into()));
            };
            if hi.checked_add(1) != Some(lo) {
                return Err(bad(format!("`{}` and `{}` must meet: a value would be in none or two", w[0], w[1])));
            }
        }
        if out[1..out.len() - 1].iter().any(|b| b.lo > b.hi) {
            return Err(bad("a bracket's low end is above its high end".into()));
        }
        Ok(Ladder(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kalshis_ladder_parses_and_prints_back() {
        let text = "<=79,80-81,82-83,84-85,86-87,>=88";
        let l: Ladder = text.parse().unwrap();
        assert_eq!(l.to_string(), text);
        assert_eq!(l.brackets().len(), 6);
        assert!(l.brackets()[0].contains(-40) && l.brackets()[0].contains(79) && !l.brackets()[0].contains(80));
        assert!(l.brackets()[5].contains(88) && l.brackets()[5].contains(130));
        let neg: Ladder = "<=-3,-2--1,0,>=1".parse().unwrap();
        assert_eq!(neg.brackets()[1], Bracket { lo: Some(-2), hi: Some(-1) });
        assert_eq!(neg.to_string(), "<=-3,-2--1,0,>=1");
    }

    #[test]
    fn a_ladder_that_misses_or_repeats_a_value_is_refused() {
        for bad in
            ["80-81,82-83", "<=79,81-82,>=83", "<=79,79-80,>=81", "<=79,>=79", "<=79,80-x,>=82", "<=79", ">=80,<=79"]
        {
            assert!(bad.parse::<Ladder>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_usual_ladder_centres_two_degree_brackets_on_the_median() {
        assert_eq!(Ladder::around(83, 2, 4).to_string(), "<=77,78-79,80-81,82-83,84-85,>=86");
        let l = Ladder::around(84, 2, 4);
        assert_eq!(l.to_string(), "<=79,80-81,82-83,84-85,86-87,>=88");
        let cold = Ladder::around(-3, 2, 4);
        assert_eq!(cold.to_string(), "<=-9,-8--7,-6--5,-4--3,-2--1,>=0");
        assert!(cold.to_string().parse::<Ladder>().is_ok());
    }
}
