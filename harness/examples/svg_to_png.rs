//! `cargo run -p harness --example svg_to_png -- IN.svg OUT.png`: rasterise a picture
//! (`run --svg`) with resvg and the system's fonts, as the picture tests do, to look at it
//! where no SVG viewer is at hand.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = args.as_slice() else {
        eprintln!("usage: svg_to_png IN.svg OUT.png");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(input) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{input}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = resvg::usvg::Options::default();
    options.fontdb_mut().load_system_fonts();
    let tree = match resvg::usvg::Tree::from_str(&text, &options) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{input}: {e}");
            return ExitCode::from(2);
        }
    };
    let size = tree.size().to_int_size();
    let Some(mut pixmap) = resvg::tiny_skia::Pixmap::new(size.width(), size.height()) else {
        eprintln!("{input}: an empty picture");
        return ExitCode::from(2);
    };
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    match pixmap.save_png(output) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{output}: {e}");
            ExitCode::from(2)
        }
    }
}
