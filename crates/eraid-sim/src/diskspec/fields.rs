//! Typed access to block parameters, with errors that point at the line.

use super::syntax::{Block, Param, Value};
use super::SpecError;

/// A block from one file, so errors can name that file.
pub struct Fields<'a> {
    pub file: &'a str,
    pub block: &'a Block,
}

impl<'a> Fields<'a> {
    pub fn new(file: &'a str, block: &'a Block) -> Self {
        Fields { file, block }
    }

    pub fn param(&self, key: &str) -> Result<&'a Param, SpecError> {
        self.block.get(key).ok_or_else(|| {
            SpecError::new(
                self.file,
                self.block.line,
                format!("block '{}' lacks parameter '{key}'", self.block.type_name),
            )
        })
    }

    pub fn err(&self, p: &Param, msg: impl Into<String>) -> SpecError {
        SpecError::new(self.file, p.line, msg)
    }

    pub fn number(&self, key: &str) -> Result<f64, SpecError> {
        let p = self.param(key)?;
        match p.value {
            Value::Number(n) if n.is_finite() => Ok(n),
            _ => Err(self.err(p, format!("'{key}' must be a number"))),
        }
    }

    pub fn number_or(&self, key: &str, default: f64) -> Result<f64, SpecError> {
        if self.block.get(key).is_some() {
            self.number(key)
        } else {
            Ok(default)
        }
    }

    pub fn non_negative(&self, key: &str) -> Result<f64, SpecError> {
        let n = self.number(key)?;
        if n < 0.0 {
            return Err(self.err(self.param(key)?, format!("'{key}' must not be negative")));
        }
        Ok(n)
    }

    /// A non-negative whole number.
    pub fn count(&self, key: &str) -> Result<u64, SpecError> {
        let p = self.param(key)?;
        match p.value {
            Value::Number(n) if n >= 0.0 && n.fract() == 0.0 && n < 9.0e15 => Ok(n as u64),
            _ => Err(self.err(p, format!("'{key}' must be a non-negative integer"))),
        }
    }

    pub fn count_or(&self, key: &str, default: u64) -> Result<u64, SpecError> {
        if self.block.get(key).is_some() {
            self.count(key)
        } else {
            Ok(default)
        }
    }

    pub fn flag(&self, key: &str) -> Result<bool, SpecError> {
        Ok(self.count(key)? != 0)
    }

    pub fn flag_or(&self, key: &str, default: bool) -> Result<bool, SpecError> {
        Ok(self.count_or(key, u64::from(default))? != 0)
    }

    pub fn block(&self, key: &str) -> Result<&'a Block, SpecError> {
        let p = self.param(key)?;
        match &p.value {
            Value::Block(b) => Ok(b),
            _ => Err(self.err(p, format!("'{key}' must be a block '{{ ... }}'"))),
        }
    }

    pub fn word(&self, key: &str) -> Result<String, SpecError> {
        let p = self.param(key)?;
        match &p.value {
            Value::Word(w) => Ok(w.clone()),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err(self.err(p, format!("'{key}' must be a word"))),
        }
    }

    /// A list of non-negative integers.
    pub fn int_list(&self, key: &str) -> Result<Vec<u64>, SpecError> {
        let p = self.param(key)?;
        let Value::List(items) = &p.value else {
            return Err(self.err(p, format!("'{key}' must be a list '[ ... ]'")));
        };
        items
            .iter()
            .map(|(v, line)| match v {
                Value::Number(n) if *n >= 0.0 && n.fract() == 0.0 => Ok(*n as u64),
                _ => Err(SpecError::new(
                    self.file,
                    *line,
                    format!("'{key}' entries must be non-negative integers"),
                )),
            })
            .collect()
    }

    /// A list of numbers.
    pub fn number_list(&self, key: &str) -> Result<Vec<(f64, usize)>, SpecError> {
        let p = self.param(key)?;
        let Value::List(items) = &p.value else {
            return Err(self.err(p, format!("'{key}' must be a list '[ ... ]'")));
        };
        items
            .iter()
            .map(|(v, line)| match v {
                Value::Number(n) if n.is_finite() => Ok((*n, *line)),
                _ => Err(SpecError::new(
                    self.file,
                    *line,
                    format!("'{key}' entries must be numbers"),
                )),
            })
            .collect()
    }
}
