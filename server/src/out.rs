//! A command's standard output. A reader that has gone (`origin status | head -1`) took what
//! it wanted: what the command writes after that is dropped and the command goes on to its end
//! (a replay still rebuilds the index; `journal verify` still exits with its verdict). Any other
//! failure to write (a full disk under a redirect) is an error naming standard output.

use std::io::{self, StdoutLock, Write};

pub struct Out {
    stdout: StdoutLock<'static>,
    gone: bool,
}

impl Out {
    pub fn new() -> Out {
        Out { stdout: io::stdout().lock(), gone: false }
    }

    /// Whether the reader has gone (a command that would only go on writing can stop).
    pub fn gone(&self) -> bool {
        self.gone
    }

    fn taken(&mut self, r: io::Result<()>) -> io::Result<()> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.gone = true;
                Ok(())
            }
            r => r,
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.gone {
            return Ok(buf.len());
        }
        match self.stdout.write(buf) {
            Ok(n) => Ok(n),
            Err(e) => self.taken(Err(e)).map(|()| buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.gone {
            return Ok(());
        }
        let r = self.stdout.flush();
        self.taken(r)
    }
}

/// Writes a line to an [`Out`] (format arguments as `println!`'s), failing the command with
/// the error named when standard output cannot be written for another reason than its reader
/// having gone.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        anyhow::Context::context(
            std::io::Write::write_fmt(&mut $out, format_args!("{}\n", format_args!($($arg)*))),
            "writing to standard output",
        )?
    };
}
pub(crate) use say;
