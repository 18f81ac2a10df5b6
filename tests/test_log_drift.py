"""Schema drift across the files of one log (issue 43, item 4): ``schema="strict"`` refuses the
first file whose columns differ, naming it and the column, in every reader; ``"union"`` reads a
missing column as null there and says so, and integer and decimal versions of a column as
decimals. Before: DuckDB stopped at the first file lacking a column, Polars raised a SchemaError
whose fix hce did not pass through, Dask a KeyError at compute time, and pandas filled NaN silently.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import hce
from hce.cli import app
from hce.errors import LogFormatError

pytest.importorskip("duckdb", reason='DuckDB is not installed: pip install "hce[engines]"')
pytest.importorskip("polars", reason='Polars is not installed: pip install "hce[engines]"')
READERS = ["pandas", "duckdb", "polars", pytest.param("dask", marks=pytest.mark.skipif(
    importlib.util.find_spec("dask") is None, reason='Dask is not installed: pip install "hce[dask]"'))]  # fmt: skip
pytestmark = [
    pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Data type alias 'a' was deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated"),
]


def part(first: int, n: int = 4, **columns) -> pd.DataFrame:
    ids = range(first, first + n)
    return pd.DataFrame({"attempt_id": [f"a{i}" for i in ids], "item_id": [f"T{i % 3}" for i in ids],
                         "condition_id": "A", "attempt": 1, **columns})  # fmt: skip


def folder(tmp_path, *parts: pd.DataFrame):
    root = tmp_path / "log"
    (root / "condition_id=A").mkdir(parents=True)
    for k, frame in enumerate(parts):
        frame.drop(columns="condition_id").to_parquet(root / "condition_id=A" / f"part-{k}.parquet", index=False)
    return root


def read(root, engine: str, **options) -> pd.DataFrame:
    import narwhals as nw

    got = hce.read_log(root, engine=engine, **options)
    frame = got if isinstance(got, pd.DataFrame) else nw.from_native(got).lazy().collect().to_pandas()
    return frame.sort_values("attempt_id").reset_index(drop=True)


@pytest.mark.parametrize("engine", READERS)
def test_strict_refuses_a_file_missing_a_column_or_with_one_more_naming_both(tmp_path, engine):
    lacking = folder(tmp_path / "lacking", part(0, total=[3.0, 4, 5, 6]), part(4))
    with pytest.raises(LogFormatError, match=r"part-1.parquet: column 'total' is missing \(.*part-0.parquet has it\).*--schema union"):
        hce.read_log(lacking, engine=engine)
    extra = folder(tmp_path / "extra", part(0), part(4, note=list("wxyz")))
    with pytest.raises(LogFormatError, match=r"part-1.parquet: column 'note' is not in .*part-0.parquet"):
        hce.read_log(extra, engine=engine)


@pytest.mark.parametrize("engine", READERS)
def test_union_reads_a_missing_column_as_null_and_says_so(tmp_path, engine):
    root = folder(tmp_path, part(0, total=[3.0, 4, 5, 6]), part(4, note=list("wxyz")))
    with pytest.warns(hce.errors.HceWarning, match=r"different columns \(schema='union'\): 'total' \(e.g. .*part-1.parquet\); 'note'"):
        got = read(root, engine, schema="union")
    assert got["total"].tolist()[:4] == [3.0, 4, 5, 6] and got["total"].iloc[4:].isna().all()
    assert got["note"].iloc[:4].isna().all() and got["note"].iloc[4:].tolist() == list("wxyz")
    assert got["condition_id"].astype(str).eq("A").all() and len(got) == 8


@pytest.mark.parametrize("engine", READERS)
def test_integers_in_one_file_and_decimals_in_another(tmp_path, engine):
    root = folder(tmp_path, part(0, total=[3, 4, 5, 6]), part(4, total=[1.5, 2, 2.5, 3]))
    with pytest.raises(LogFormatError, match=r"part-1.parquet: column 'total' holds float values where .*part-0.parquet holds integer"):
        hce.read_log(root, engine=engine)
    got = read(root, engine, schema="union")
    np.testing.assert_array_equal(got["total"].to_numpy(float), [3, 4, 5, 6, 1.5, 2, 2.5, 3])


@pytest.mark.parametrize("schema", ["strict", "union"])
def test_text_in_one_file_and_numbers_in_another_is_refused_in_both_modes(tmp_path, schema):
    root = folder(tmp_path, part(0, total=[3.0, 4, 5, 6]), part(4, total=list("3456")))
    with pytest.raises(LogFormatError, match=r"part-1.parquet: column 'total' holds text values where .* holds float"):
        hce.read_log(root, engine="duckdb", schema=schema)


@pytest.mark.parametrize("engine", READERS)
def test_a_column_of_nulls_or_a_categorical_reads_in_both_modes(tmp_path, engine):
    # before: a day without errors writes error_message as Arrow's null type, and a pandas
    # Categorical a dictionary: both "hold other values where ... holds text", in both modes
    root = folder(tmp_path, part(0, total=[3.0, 4, 5, 6], error_message=list("abcd"), panel=pd.Categorical(list("uvuv"))),
                  part(4, total=[1.0, 2, 2, 3], error_message=[None] * 4, panel=list("vvuu")))  # fmt: skip
    for schema in ("strict", "union"):
        got = read(root, engine, schema=schema)
        assert got["error_message"].iloc[4:].isna().all() and got["error_message"].iloc[:4].tolist() == list("abcd")
        assert got["panel"].astype(str).tolist() == list("uvuvvvuu")
    mixed = folder(tmp_path / "mixed", part(0, total=[None] * 4), part(4, total=[3.0, 4, 5, 6]), part(8, total=list("3456")))
    with pytest.raises(LogFormatError, match=r"part-2.parquet: column 'total' holds text values where .*part-1.parquet holds float"):
        hce.read_log(mixed, engine=engine)


@pytest.mark.parametrize("engine", READERS)
def test_columns_that_differ_only_in_case_are_refused_in_both_modes(tmp_path, engine):
    # before, with --schema union: DuckDB and Spark read Total and total as one column (1472 scores),
    # pandas, Polars and Dask as two (733 in total); in one file DuckDB renamed one Total_1
    across = folder(tmp_path / "across", part(0, total=[3.0, 4, 5, 6]), part(4, Total=[1.0, 2, 2, 3]))
    within = folder(tmp_path / "within", part(0, total=[3.0, 4, 5, 6], Total=[1.0, 2, 2, 3]))
    for root in (across, within):
        for schema in ("strict", "union"):
            with pytest.raises(LogFormatError, match=r"columns 'total' and 'Total' differ only in case"):
                hce.read_log(root, engine=engine, schema=schema)


def test_a_list_of_csv_files_in_pandas_follows_the_same_rule(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    part(0, total=[3.0, 4, 5, 6]).to_csv(a, index=False)
    part(4).to_csv(b, index=False)
    with pytest.raises(LogFormatError, match=r"b.csv: column 'total' is missing"):
        hce.read_log([a, b])
    with pytest.warns(hce.errors.HceWarning, match="read as null"):
        assert hce.read_log([a, b], schema="union")["total"].isna().sum() == 4


@pytest.mark.filterwarnings("always::hce.errors.HceWarning")  # the CLI prints it
@pytest.mark.parametrize("engine", ["auto", "duckdb"])  # auto: this small folder is read into pandas
def test_hce_report_schema_option(tmp_path, engine):
    root = folder(tmp_path, part(0, total=[3.0, 4, 5, 6]), part(4, total=[2.0, 3, 4, 5], note=list("wxyz")))
    base = ["report", str(root), "--engine", engine, "--out"]
    done = CliRunner().invoke(app, [*base, str(tmp_path / "strict")])
    assert done.exit_code == 2 and "column 'note' is not in" in done.output, done.output
    done = CliRunner().invoke(app, [*base, str(tmp_path / "union"), "--schema", "union"])
    assert "read as null" in done.output and (tmp_path / "union" / "report.md").exists(), done.output
    done = CliRunner().invoke(app, [*base, str(tmp_path / "bad"), "--schema", "loose"])
    assert done.exit_code == 2 and "choose strict or union" in done.output
