//! Writing query results in the formats `wxlake sql --format` offers.

use std::io::Write;
use std::str::FromStr;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::error::ArrowError;
use datafusion::parquet::arrow::ArrowWriter;
use thiserror::Error;

/// Output format of query results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Table,
    Csv,
    Json,
    Parquet,
}

impl FromStr for OutputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(OutputFormat::Table),
            "csv" => Ok(OutputFormat::Csv),
            "json" => Ok(OutputFormat::Json),
            "parquet" => Ok(OutputFormat::Parquet),
            _ => Err(format!("unknown format '{s}'; valid: table, csv, json, parquet")),
        }
    }
}

#[derive(Debug, Error)]
pub enum OutputError {
    #[error("{0}")]
    Arrow(#[from] ArrowError),
    #[error("{0}")]
    Parquet(#[from] datafusion::parquet::errors::ParquetError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Writes `batches` to `out` in `format`. JSON is one array of row objects; CSV has a
/// header; Parquet is a complete file (zstd).
pub fn write_batches<W: Write + Send>(
    batches: &[RecordBatch],
    format: OutputFormat,
    out: &mut W,
) -> Result<(), OutputError> {
    match format {
        OutputFormat::Table => {
            let text = datafusion::arrow::util::pretty::pretty_format_batches(batches)?;
            writeln!(out, "{text}")?;
        }
        OutputFormat::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new().with_header(true).build(&mut *out);
            for b in batches {
                w.write(b)?;
            }
        }
        OutputFormat::Json => {
            let mut w = datafusion::arrow::json::ArrayWriter::new(&mut *out);
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
            writeln!(out)?;
        }
        OutputFormat::Parquet => {
            let Some(first) = batches.first() else { return Ok(()) };
            let props = datafusion::parquet::file::properties::WriterProperties::builder()
                .set_compression(datafusion::parquet::basic::Compression::ZSTD(Default::default()))
                .build();
            let mut w = ArrowWriter::try_new(&mut *out, first.schema(), Some(props))?;
            for b in batches {
                w.write(b)?;
            }
            w.close()?;
        }
    }
    Ok(())
}
