//! Data feeders: a CSV file whose header row names variables, one row taken at the start of
//! each iteration. Rows are walked in order from each virtual user's own offset (so users
//! hold different rows at once), or drawn at random with the run's seed. Read whole when the
//! scenario loads: a feeder is test data, not a stream.
//!
//! The CSV reader is RFC 4180's subset that spreadsheets write (commas, double-quoted fields
//! with `""` for a quote, CRLF or LF): a dozen lines, where the `csv` crate would bring
//! serde machinery a header row and string cells do not need.

use crate::think::Rng;

/// The order rows are taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Sequential,
    Random,
}

/// A loaded feeder.
#[derive(Debug, Clone, PartialEq)]
pub struct Feeder {
    /// The file as written in the scenario, for messages.
    pub file: String,
    /// The variable slot each column sets.
    pub slots: Vec<usize>,
    /// The column names (the header row).
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub order: Order,
}

impl Feeder {
    /// The row virtual user `user` takes for its `iteration`-th iteration (from 0).
    pub fn row(&self, user: usize, iteration: u64, rng: &mut Rng) -> &[String] {
        let n = self.rows.len();
        let i = match self.order {
            Order::Sequential => ((user as u64 + iteration) % n as u64) as usize,
            Order::Random => rng.below(n),
        };
        &self.rows[i]
    }

    /// Writes the row for this iteration into the user's variable values.
    pub fn fill(&self, user: usize, iteration: u64, rng: &mut Rng, values: &mut [String]) {
        let row = self.row(user, iteration, rng);
        for (slot, cell) in self.slots.iter().zip(row) {
            let v = &mut values[*slot];
            v.clear();
            v.push_str(cell);
        }
    }
}

/// Parses CSV text into its header and rows; every row must have the header's width.
pub fn parse_csv(text: &str) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut line = 1;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => quoted = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push((line, std::mem::take(&mut record)));
                line += 1;
            }
            _ => field.push(c),
        }
    }
    if quoted {
        return Err(format!("line {line}: a quoted field is not closed"));
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push((line, record));
    }
    // Blank lines carry nothing.
    records.retain(|(_, r)| !(r.len() == 1 && r[0].is_empty()));
    let mut records = records.into_iter();
    let Some((_, header)) = records.next() else {
        return Err("empty: the first row must name the variables".into());
    };
    let header: Vec<String> = header.into_iter().map(|h| h.trim().to_string()).collect();
    if let Some(bad) = header.iter().find(|h| h.is_empty()) {
        return Err(format!(
            "the header row has an empty column name ({bad:?}); name every column"
        ));
    }
    let mut rows = Vec::new();
    for (line, r) in records {
        if r.len() != header.len() {
            return Err(format!(
                "line {line} has {} fields, the header {}; every row needs one value per column",
                r.len(),
                header.len()
            ));
        }
        rows.push(r);
    }
    if rows.is_empty() {
        return Err("no rows after the header; add at least one".into());
    }
    Ok((header, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feeder(order: Order) -> Feeder {
        let (columns, rows) = parse_csv("USER,PASS\nann,a1\nbob,b2\ncid,c3\n").unwrap();
        Feeder {
            file: "users.csv".into(),
            slots: vec![0, 1],
            columns,
            rows,
            order,
        }
    }

    #[test]
    fn csv_quotes_crlf_and_widths() {
        let (h, rows) = parse_csv("a,b\r\n\"x,1\",\"say \"\"hi\"\"\"\r\n\r\n2,3").unwrap();
        assert_eq!(h, ["a", "b"]);
        assert_eq!(rows, [vec!["x,1", "say \"hi\""], vec!["2", "3"]]);
        assert!(parse_csv("a,b\n1\n")
            .unwrap_err()
            .contains("line 2 has 1 fields"));
        assert!(parse_csv("").unwrap_err().contains("name the variables"));
        assert!(parse_csv("a\n").unwrap_err().contains("no rows"));
        assert!(parse_csv("a\n\"open\n").unwrap_err().contains("not closed"));
    }

    #[test]
    fn sequential_users_walk_from_their_own_offset_and_wrap() {
        let f = feeder(Order::Sequential);
        let mut rng = Rng::new(1);
        let walk = |user| -> Vec<String> {
            (0..4)
                .map(|i| f.row(user, i, &mut Rng::new(1))[0].clone())
                .collect()
        };
        assert_eq!(walk(0), ["ann", "bob", "cid", "ann"]);
        assert_eq!(walk(1), ["bob", "cid", "ann", "bob"]);
        let mut values = vec![String::new(), String::new()];
        f.fill(2, 0, &mut rng, &mut values);
        assert_eq!(values, ["cid", "c3"]);
    }

    #[test]
    fn random_rows_follow_the_seed() {
        let f = feeder(Order::Random);
        let draw = |seed| -> Vec<String> {
            let mut rng = Rng::new(seed);
            (0..30).map(|i| f.row(0, i, &mut rng)[0].clone()).collect()
        };
        assert_eq!(draw(9), draw(9));
        let d = draw(9);
        for name in ["ann", "bob", "cid"] {
            assert!(d.iter().any(|n| n == name), "{name} never drawn in {d:?}");
        }
    }
}
