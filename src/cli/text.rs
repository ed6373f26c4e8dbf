//! Plain-text layout shared by the commands that print tables (`show`, `round`): one
//! aligner, so every table of the CLI lines up the same way.

/// Rows of cells as aligned columns, two spaces apart, each line indented by `indent`.
pub(super) fn table(indent: &str, rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}", w = *w))
            .collect();
        out.push_str(indent);
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_on_the_widest_cell_and_lines_end_clean() {
        let rows = vec![
            vec!["Role".to_owned(), "Miner".to_owned(), "".to_owned()],
            vec!["challenger".to_owned(), "m".to_owned(), "x".to_owned()],
        ];
        assert_eq!(
            table("  ", &rows),
            "  Role        Miner\n  challenger  m      x\n"
        );
    }
}
