// Copies a batch of a sql.js statement's rows into typed arrays, for `sqlsource-sqljs`'s table
// scans. Why a script of its own: a row read cell by cell from Rust is one wasm-bindgen crossing
// per cell, and reading integers as BigInts (sql.js's only exact way) is five times slower than
// as numbers; here the cells are read as plain numbers by JavaScript itself and cross into Rust
// as two typed arrays per batch. Loaded with `importScripts` right after `sql-wasm.js` (the
// worker's wasm-bindgen glue has no module scope to bundle it: `--target no-modules`).
//
// Each cell gets a tag and a number:
//   0 NULL;
//   1 an integer, exact (|v| <= 2^53 - 1);
//   2 a real;
//   3 a text and 4 a blob: the number is its index in `extra`;
//   5 an integer past 2^53: the number is the index in `extra` of its decimal text.
// A row with an integer that a number cannot hold exactly is read again with BigInts (tag 5);
// readers that expect such ids split them in SQL instead (`sqlsource::wide_halves`), so this is
// the rare path. A real that happens to be whole comes as an integer (tag 1).
(function () {
  // A cell that is not a number: NULL, a text or a blob.
  function putOther(v, k, nums, tags, extra) {
    if (v === null || v === undefined) {
      tags[k] = 0;
      nums[k] = 0;
    } else {
      tags[k] = typeof v === 'string' ? 3 : 4;
      nums[k] = extra.length;
      extra.push(v);
    }
  }

  // The row's cells as numbers; false if one is an integer past 2^53 (the row is then read
  // again, and what this put in `extra` stays unused).
  function putNumbers(cells, at, columns, nums, tags, extra) {
    for (var i = 0; i < columns; i++) {
      var v = i < cells.length ? cells[i] : null;
      if (typeof v !== 'number') {
        putOther(v, at + i, nums, tags, extra);
      } else if (!Number.isInteger(v)) {
        tags[at + i] = 2;
        nums[at + i] = v;
      } else if (Number.isSafeInteger(v)) {
        tags[at + i] = 1;
        nums[at + i] = v;
      } else {
        return false;
      }
    }
    return true;
  }

  // The row's cells read with BigInts: exact integers whatever their size.
  function putExact(cells, at, columns, nums, tags, extra) {
    for (var i = 0; i < columns; i++) {
      var v = i < cells.length ? cells[i] : null;
      if (typeof v === 'bigint') {
        if (v >= -9007199254740991n && v <= 9007199254740991n) {
          tags[at + i] = 1;
          nums[at + i] = Number(v);
        } else {
          tags[at + i] = 5;
          nums[at + i] = extra.length;
          extra.push(v.toString());
        }
      } else if (typeof v === 'number') {
        tags[at + i] = 2;
        nums[at + i] = v;
      } else {
        putOther(v, at + i, nums, tags, extra);
      }
    }
  }

  var exact = { useBigInt: true };

  // The current row through sql.js's `get()`: an array of cells, read again with BigInts if
  // one is an integer a number cannot hold.
  function putRow(stmt, at, columns, nums, tags, extra) {
    if (!putNumbers(stmt.get(), at, columns, nums, tags, extra)) {
      putExact(stmt.get(null, exact), at, columns, nums, tags, extra);
    }
  }

  // SQLite's fundamental types (sqlite3_column_type).
  var INTEGER = 1, FLOAT = 2, NULL = 5;

  // The statement's SQLite pointer, if this sql.js exposes what reading cells directly needs:
  // its C entry points `_sqlite3_column_type`, `_sqlite3_column_double` and `_sqlite3_sql`
  // (sql.js 1.x exports them on the module) and the pointer itself, which sql.js keeps in a
  // property its minifier named. That property is found by asking SQLite for each numeric
  // property's statement text and comparing it with `getSQL()`: a wrong guess reads other
  // memory (wasm's bounds hold) and fails the comparison. 0 when not found: `get()` then.
  function pointerOf(stmt, SQL) {
    if (stmt.ncclscopePointer !== undefined) return stmt.ncclscopePointer;
    var found = 0;
    if (SQL && typeof SQL._sqlite3_column_type === 'function' &&
        typeof SQL._sqlite3_column_double === 'function' &&
        typeof SQL._sqlite3_sql === 'function' && typeof SQL.UTF8ToString === 'function' &&
        typeof stmt.getSQL === 'function') {
      var text = stmt.getSQL();
      for (var key in stmt) {
        var v = stmt[key];
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 4096) continue;
        try {
          if (SQL.UTF8ToString(SQL._sqlite3_sql(v)) === text) { found = v; break; }
        } catch (e) { /* not a statement */ }
      }
    }
    stmt.ncclscopePointer = found;
    return found;
  }

  // Up to `maxRows` rows, numeric cells read straight from SQLite (two calls a cell, no array a
  // row: a third less time a kernel scan); a row with a text, a blob or an integer a number
  // cannot hold goes through `putRow`, so every cell comes out as `get()` gives it.
  function direct(stmt, p, SQL, columns, maxRows, nums, tags, extra) {
    var type = SQL._sqlite3_column_type, real = SQL._sqlite3_column_double;
    var rows = 0;
    while (rows < maxRows && stmt.step()) {
      var at = rows * columns;
      for (var i = 0; i < columns; i++) {
        var t = type(p, i);
        if (t === NULL) {
          tags[at + i] = 0;
          nums[at + i] = 0;
          continue;
        }
        if (t !== INTEGER && t !== FLOAT) break;
        var v = real(p, i);
        if (t === FLOAT && !Number.isInteger(v)) {
          tags[at + i] = 2;
        } else if (Number.isSafeInteger(v)) {
          tags[at + i] = 1;
        } else {
          break;
        }
        nums[at + i] = v;
      }
      if (i < columns) putRow(stmt, at, columns, nums, tags, extra);
      rows++;
    }
    return rows;
  }

  self.ncclscopeSqlBatch = function (stmt, columns, maxRows, nums, tags, extra, SQL) {
    var p = pointerOf(stmt, SQL);
    if (p) return direct(stmt, p, SQL, columns, maxRows, nums, tags, extra);
    var rows = 0;
    while (rows < maxRows && stmt.step()) {
      putRow(stmt, rows * columns, columns, nums, tags, extra);
      rows++;
    }
    return rows;
  };
})();
