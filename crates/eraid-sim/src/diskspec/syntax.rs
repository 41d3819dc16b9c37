//! Generic reader for DiskSim's parameter-block syntax.
//!
//! DiskSim files are made of blocks `type_name [instance_name] { Key = value, ... }`
//! where a key is several words (`Read hit over. after read`) and a value is a
//! number, a bare word, `source FILE`, a nested block or a `[ list ]`.
//! `#` starts a comment that runs to the end of the line. This module only
//! builds the tree; the meaning of the keys lives in `diskspecs_file.rs` and
//! `model_file.rs`.

use super::SpecError;

/// One parsed value, with the line where it starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    Word(String),
    /// `source FILE`: the text of another file stands here.
    Source(String),
    Block(Block),
    List(Vec<(Value, usize)>),
}

/// A `type [name] { ... }` block.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub type_name: String,
    pub name: Option<String>,
    pub line: usize,
    pub params: Vec<Param>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub key: String,
    pub value: Value,
    pub line: usize,
}

/// Keys are compared ignoring case and runs of blanks, as DiskSim users write
/// them with varying spacing.
pub fn normalize_key(key: &str) -> String {
    key.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

impl Block {
    pub fn get(&self, key: &str) -> Option<&Param> {
        let want = normalize_key(key);
        self.params.iter().find(|p| normalize_key(&p.key) == want)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Open,
    Close,
    LOpen,
    LClose,
    Eq,
    Comma,
    Word(String),
}

fn tokenize(text: &str) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("");
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut Vec<(Tok, usize)>| {
            if !word.is_empty() {
                out.push((Tok::Word(std::mem::take(word)), line));
            }
        };
        for c in content.chars() {
            let tok = match c {
                '{' => Some(Tok::Open),
                '}' => Some(Tok::Close),
                '[' => Some(Tok::LOpen),
                ']' => Some(Tok::LClose),
                '=' => Some(Tok::Eq),
                ',' => Some(Tok::Comma),
                c if c.is_whitespace() => None,
                c => {
                    word.push(c);
                    continue;
                }
            };
            flush(&mut word, &mut out);
            if let Some(t) = tok {
                out.push((t, line));
            }
        }
        flush(&mut word, &mut out);
    }
    out
}

struct Parser<'a> {
    file: &'a str,
    toks: Vec<(Tok, usize)>,
    pos: usize,
}

impl Parser<'_> {
    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or_else(|| self.toks.last())
            .map_or(1, |t| t.1)
    }
    fn err(&self, msg: impl Into<String>) -> SpecError {
        SpecError::new(self.file, self.line(), msg)
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).map(|t| t.0.clone());
        self.pos += 1;
        t
    }
    fn words(&mut self) -> Vec<String> {
        let mut ws = Vec::new();
        while let Some(Tok::Word(w)) = self.peek() {
            ws.push(w.clone());
            self.pos += 1;
        }
        ws
    }

    /// Body of a block after its `{`, up to and including the `}`.
    fn block_body(
        &mut self,
        type_name: String,
        name: Option<String>,
        line: usize,
    ) -> Result<Block, SpecError> {
        let mut params = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Close) => {
                    self.pos += 1;
                    return Ok(Block {
                        type_name,
                        name,
                        line,
                        params,
                    });
                }
                Some(Tok::Comma) => self.pos += 1,
                Some(Tok::Word(_)) => {
                    let key_line = self.line();
                    let key = self.words().join(" ");
                    if self.next() != Some(Tok::Eq) {
                        return Err(SpecError::new(
                            self.file,
                            key_line,
                            format!("expected '=' after parameter name '{key}'"),
                        ));
                    }
                    let value = self.value()?;
                    params.push(Param {
                        key,
                        value,
                        line: key_line,
                    });
                }
                None => {
                    return Err(self.err(format!("block '{type_name}' is not closed with '}}'")))
                }
                Some(t) => return Err(self.err(format!("unexpected {t:?} in block '{type_name}'"))),
            }
        }
    }

    fn value(&mut self) -> Result<Value, SpecError> {
        let line = self.line();
        if self.peek() == Some(&Tok::LOpen) {
            self.pos += 1;
            return self.list();
        }
        let ws = self.words();
        if self.peek() == Some(&Tok::Open) {
            self.pos += 1;
            let mut it = ws.into_iter();
            let type_name = it
                .next()
                .ok_or_else(|| self.err("block without a type name"))?;
            return Ok(Value::Block(self.block_body(type_name, it.next(), line)?));
        }
        match ws.as_slice() {
            [] => Err(self.err("missing value")),
            [w] => Ok(match w.parse::<f64>() {
                Ok(n) => Value::Number(n),
                Err(_) => Value::Word(w.clone()),
            }),
            [s, path] if s == "source" => Ok(Value::Source(path.clone())),
            many => Ok(Value::Word(many.join(" "))),
        }
    }

    fn list(&mut self) -> Result<Value, SpecError> {
        let mut items = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::LClose) => {
                    self.pos += 1;
                    return Ok(Value::List(items));
                }
                Some(Tok::Comma) => self.pos += 1,
                None => return Err(self.err("list is not closed with ']'")),
                Some(_) => {
                    let line = self.line();
                    items.push((self.value()?, line));
                }
            }
        }
    }
}

/// One top-level item of a DiskSim file.
#[derive(Debug, Clone, PartialEq)]
pub enum TopItem {
    Block(Block),
    /// `source FILE`: the file's items stand here.
    Source {
        file: String,
        line: usize,
    },
    /// `instantiate [ names ] as SPEC`.
    Instantiate {
        names: Vec<String>,
        spec: String,
        line: usize,
    },
    /// `topology TYPE NAME [ children ]`.
    Topology(TopoNode),
}

/// A component in a `topology` tree.
#[derive(Debug, Clone, PartialEq)]
pub struct TopoNode {
    pub type_name: String,
    pub name: String,
    pub line: usize,
    pub children: Vec<TopoNode>,
}

impl Parser<'_> {
    fn word(&mut self, what: &str) -> Result<String, SpecError> {
        match self.next() {
            Some(Tok::Word(w)) => Ok(w),
            _ => {
                self.pos -= 1;
                Err(self.err(format!("expected {what}")))
            }
        }
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Result<(), SpecError> {
        if self.peek() == Some(&tok) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(format!("expected {what}")))
        }
    }

    /// `TYPE NAME [ child, child ... ]`, the `[`...`]` included.
    fn topo_node(&mut self) -> Result<TopoNode, SpecError> {
        let line = self.line();
        let type_name = self.word("a component type")?;
        let name = self.word("a component name")?;
        self.expect(Tok::LOpen, "'[' after a topology component")?;
        let mut children = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::LClose) => {
                    self.pos += 1;
                    break;
                }
                Some(Tok::Comma) => self.pos += 1,
                None => return Err(self.err("topology list is not closed with ']'")),
                Some(_) => children.push(self.topo_node()?),
            }
        }
        Ok(TopoNode {
            type_name,
            name,
            line,
            children,
        })
    }

    fn instantiate(&mut self, line: usize) -> Result<TopItem, SpecError> {
        self.expect(Tok::LOpen, "'[' after 'instantiate'")?;
        let mut names = Vec::new();
        loop {
            match self.next() {
                Some(Tok::LClose) => break,
                Some(Tok::Comma) => {}
                Some(Tok::Word(w)) => names.push(w),
                _ => return Err(SpecError::new(self.file, line, "bad 'instantiate' list")),
            }
        }
        if self.word("'as'")? != "as" {
            return Err(SpecError::new(
                self.file,
                line,
                "expected 'as' in 'instantiate'",
            ));
        }
        let spec = self.word("a spec name after 'as'")?;
        Ok(TopItem::Instantiate { names, spec, line })
    }
}

/// Parses the top-level items of a DiskSim file (a `.parv` run file, or a
/// `.diskspecs` / `.model` file of blocks). `file` names it in errors.
pub fn parse_top_level(file: &str, text: &str) -> Result<Vec<TopItem>, SpecError> {
    let mut p = Parser {
        file,
        toks: tokenize(text),
        pos: 0,
    };
    let mut items = Vec::new();
    while p.peek().is_some() {
        let line = p.line();
        match p.peek() {
            Some(Tok::Word(w)) if w == "source" => {
                p.pos += 1;
                let file = p.word("a file name after 'source'")?;
                items.push(TopItem::Source { file, line });
                continue;
            }
            Some(Tok::Word(w)) if w == "instantiate" => {
                p.pos += 1;
                items.push(p.instantiate(line)?);
                continue;
            }
            Some(Tok::Word(w)) if w == "topology" => {
                p.pos += 1;
                items.push(TopItem::Topology(p.topo_node()?));
                continue;
            }
            _ => {}
        }
        let ws = p.words();
        match p.next() {
            Some(Tok::Open) if !ws.is_empty() && ws.len() <= 2 => {
                let mut it = ws.into_iter();
                let type_name = it.next().unwrap_or_default();
                items.push(TopItem::Block(p.block_body(type_name, it.next(), line)?));
            }
            _ => {
                return Err(SpecError::new(
                    file,
                    line,
                    "expected a block 'type name { ... }', 'source', 'instantiate' or 'topology' at top level",
                ))
            }
        }
    }
    Ok(items)
}

/// Parses the top-level blocks of a DiskSim file. `file` names it in errors.
pub fn parse_blocks(file: &str, text: &str) -> Result<Vec<Block>, SpecError> {
    let mut blocks = Vec::new();
    for item in parse_top_level(file, text)? {
        match item {
            TopItem::Block(b) => blocks.push(b),
            TopItem::Source { line, .. }
            | TopItem::Instantiate { line, .. }
            | TopItem::Topology(TopoNode { line, .. }) => {
                return Err(SpecError::new(
                    file,
                    line,
                    "expected a block 'type name { ... }' at top level",
                ))
            }
        }
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_blocks_lists_and_comments() {
        let text = "disksim_disk D {\n  Model = source x.model,\n  Bulk sector transfer time = 0.1, # c\n  S = q { A b = 1 },\n  L = [ 1, 2 ]\n}\n";
        let b = parse_blocks("f", text).unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(
            b[0].get("bulk  SECTOR transfer time").unwrap().value,
            Value::Number(0.1)
        );
        assert_eq!(
            b[0].get("model").unwrap().value,
            Value::Source("x.model".into())
        );
        assert!(matches!(b[0].get("L").unwrap().value, Value::List(ref v) if v.len() == 2));
    }

    #[test]
    fn run_file_items() {
        let text = "disksim_bus B { x = 1 }\nsource d.diskspecs\ninstantiate [ bus1, bus2 ] as B\ntopology disksim_iodriver driver0 [\n disksim_bus bus0 [ disksim_disk disk0 [] ]\n]\n";
        let items = parse_top_level("r.parv", text).unwrap();
        assert_eq!(items.len(), 4);
        assert_eq!(
            items[1],
            TopItem::Source {
                file: "d.diskspecs".into(),
                line: 2
            }
        );
        let TopItem::Instantiate { names, spec, .. } = &items[2] else {
            panic!("not an instantiate: {:?}", items[2]);
        };
        assert_eq!((names.len(), spec.as_str()), (2, "B"));
        let TopItem::Topology(t) = &items[3] else {
            panic!("not a topology: {:?}", items[3]);
        };
        assert_eq!(t.children[0].children[0].name, "disk0");
        assert_eq!(t.children[0].line, 5);
        let e = parse_top_level("r.parv", "topology a b [ c d [ ]").unwrap_err();
        assert!(e.message.contains("not closed"), "{e}");
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_blocks("bad.diskspecs", "d x {\n a = 1,\n b 2\n}").unwrap_err();
        assert_eq!(e.file, "bad.diskspecs");
        assert_eq!(e.line, 3);
        let e = parse_blocks("f", "d x {\n a = 1,\n").unwrap_err();
        assert!(e.message.contains("not closed"));
    }
}
