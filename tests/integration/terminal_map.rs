//! `usage POOL --map` in a real pseudo-terminal of 60, 80 and 200 columns, read back through a
//! terminal emulator (vt100): what a person sees, as insta snapshots, with and without colour; and
//! the refusals (docs/usage.md, "The address-space map").

use crate::support;

use std::path::PathBuf;
use support::cli;

fn example() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot").display().to_string()
}

/// examples/snapshot plus a node holding an orphan block of blue.
fn orphan() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/map-orphan.yaml").display().to_string()
}

/// The screen after `args` ran on a terminal of `columns` columns.
fn screen(args: &[&str], columns: u16) -> vt100::Parser {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let shown = cli::on_terminal(&args, columns);
    let mut parser = vt100::Parser::new(60, columns, 0);
    // The PTY turned each newline into CR LF; on_terminal took the CR out.
    parser.process(shown.replace('\n', "\r\n").as_bytes());
    parser
}

/// The screen's text, trailing blank lines left out.
fn text(parser: &vt100::Parser, columns: u16) -> String {
    let lines: Vec<String> = parser.screen().rows(0, columns).collect();
    let end = lines.iter().rposition(|l| !l.trim().is_empty()).map_or(0, |at| at + 1);
    lines[..end].iter().map(|l| format!("{}\n", l.trim_end())).collect()
}

#[test]
fn the_map_fits_60_80_and_200_columns() {
    let (example, orphan) = (example(), orphan());
    for columns in [60u16, 80, 200] {
        // blue: a reservation, a draining CIDR, a grandfathered block, the next block, an orphan.
        let blue = text(&screen(&["usage", "blue", "--map", "--color", "never", "-f", &example, "-f", &orphan], columns), columns);
        // default: IPv4 a cell per block, IPv6 (65536 blocks) aggregated; one node highlighted.
        let node = "ip-10-0-1-206.eu-west-1.compute.internal";
        let default = text(&screen(&["usage", "default", "--map", "--node", node, "-f", &example], columns), columns);
        for (name, shown) in [("blue", &blue), ("default", &default)] {
            assert!(shown.lines().all(|l| l.chars().count() <= usize::from(columns)), "{name} at {columns}:\n{shown}");
            insta::assert_snapshot!(format!("map_{name}_{columns}"), shown);
        }
        for glyph in ['▁', '·', '×', '≡', '◆', '!', '▸'] {
            assert!(blue.contains(glyph), "{glyph} at {columns}:\n{blue}");
        }
        assert!(default.contains("● ip-10-0-1-206.eu-west-1.compute.internal 2") && default.contains("1 cell = "), "{default}");
    }
}

#[test]
fn in_colour_the_same_glyphs_each_state_in_its_own_colour() {
    let (example, orphan) = (example(), orphan());
    let args = |colour| ["usage", "blue", "--map", "--color", colour, "-f", &example, "-f", &orphan].map(String::from);
    let plain = screen(&args("never").iter().map(String::as_str).collect::<Vec<_>>(), 80);
    let painted = screen(&args("always").iter().map(String::as_str).collect::<Vec<_>>(), 80);
    assert_eq!(text(&plain, 80), text(&painted, 80), "colour changes no glyph");
    let colour_of = |glyph: &str| {
        let screen = painted.screen();
        (0..60u16)
            .flat_map(|row| (0..80u16).map(move |col| (row, col)))
            .find_map(|(row, col)| screen.cell(row, col).filter(|c| c.contents() == glyph).map(|c| c.fgcolor()))
            .unwrap_or_else(|| panic!("no {glyph} on the screen"))
    };
    // The Okabe–Ito palette as xterm-256 colours; free cells dimmed, not coloured.
    let expected = [("▁", 74), ("×", 214), ("≡", 221), ("!", 166), ("◆", 175), ("▸", 36)];
    for (glyph, index) in expected {
        assert_eq!(colour_of(glyph), vt100::Color::Idx(index), "{glyph}");
    }
    assert_eq!(colour_of("·"), vt100::Color::Default);
}

#[test]
fn the_map_is_refused_without_one_pool_or_in_a_machine_format() {
    let example = example();
    let refusals: [(&[&str], &str); 6] = [
        (&["usage", "--map"], "--map draws one pool: name exactly one (got 0)"),
        (&["usage", "blue", "green", "--map"], "--map draws one pool: name exactly one (got 2)"),
        (&["usage", "blue", "--map", "-o", "json"], "of usage --map, allowed formats are: table"),
        (&["usage", "blue", "--map", "-o", "name"], "of usage --map, allowed formats are: table"),
        (&["usage", "blue", "--map", "--node", "nope"], "node nope not found"),
        (&["usage", "blue", "--map", "--fleet", "-f", &example], "--map draws one pool of one cluster"),
    ];
    for (args, says) in refusals {
        let (code, stdout, stderr) = cli::output(cli::plugin().args(args).args(["-f", &example]));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty() && stderr.lines().count() == 1 && stderr.contains(says), "{args:?}: {stderr}");
    }
}
