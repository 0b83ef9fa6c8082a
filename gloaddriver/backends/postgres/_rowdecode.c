/* The compiled twin of row_values.decode_rows: DataRow messages to tuples of values.
 *
 * Optional: setup.py builds it where a C compiler and the interpreter's headers are
 * at hand, and row_values falls back to its pure-Python reader where it is not (or
 * when GLOADDRIVER_PURE_PYTHON is set). Both give the same values for the same bytes;
 * tests/unit/test_pg_row_values.py runs every case through both.
 *
 * decode(data, kinds, decoders[, start, end]) -> [tuple, ...]
 *   data      a buffer whose bytes start to end (default: all) are whole DataRow
 *             messages, nothing else: read in place, no copy
 *   kinds     one byte per column (row_values.Columns.kinds), or None: every column
 *             UTF-8 text. Binary: B bool, h int2, i int4, q int8, I oid, d float8,
 *             y bytea (a memoryview, a buffer on 2.7: a view of data's own bytes,
 *             no copy, which keeps data alive while the value lives); H J Q O D
 *             one-dimensional arrays of int2, int4, int8, oid, float8 without NULL
 *             (others through the column's decoder). T UTF-8 text. x the
 *             column's decoder, called with the value's bytes.
 *   decoders  a sequence of callables, one per column (used by x and arrays' other
 *             shapes), or None.
 * NULL is None. A message that is not a DataRow, a column count other than the
 * kinds', or lengths that do not add up raise ValueError.
 *
 * One source for CPython 2.7 and 3.x: the few calls that differ are the macros below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../compiled_module.h"
#include <string.h>

#if PY_MAJOR_VERSION >= 3
#define INT_FROM_LONG(v) PyLong_FromLongLong(v)
#define UINT_FROM(v) PyLong_FromUnsignedLong(v)
#define KINDS_CHECK(o) PyBytes_Check(o)
#else
#define INT_FROM_LONG(v) PyInt_FromLong((long)(v))
#define UINT_FROM(v) PyInt_FromLong((long)(v))
#define KINDS_CHECK(o) PyString_Check(o)
#endif

static PY_LONG_LONG be64(const unsigned char *p)
{
    unsigned PY_LONG_LONG v = 0;
    int k;
    for (k = 0; k < 8; k++)
        v = (v << 8) | p[k];
    return (PY_LONG_LONG)v;
}

static unsigned long be32(const unsigned char *p)
{
    return ((unsigned long)p[0] << 24) | ((unsigned long)p[1] << 16) |
           ((unsigned long)p[2] << 8) | (unsigned long)p[3];
}

static double be_double(const unsigned char *p)
{
    PY_LONG_LONG bits = be64(p);
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

static int i32(const unsigned char *p)
{
    return (int)(long)(signed int)be32(p);
}

/* The Python value of one element of a number array or fixed-width column. */
static PyObject *number(char kind, const unsigned char *p)
{
    switch (kind) {
    case 'h': case 'H':
        return INT_FROM_LONG((short)((p[0] << 8) | p[1]));
    case 'i': case 'J':
        return INT_FROM_LONG(i32(p));
    case 'q': case 'Q':
        return INT_FROM_LONG(be64(p));
    case 'I': case 'O':
        return UINT_FROM(be32(p));
    default:    /* d D */
        return PyFloat_FromDouble(be_double(p));
    }
}

static Py_ssize_t width(char kind)
{
    switch (kind) {
    case 'B': return 1;
    case 'h': case 'H': return 2;
    case 'i': case 'J': case 'I': case 'O': return 4;
    case 'q': case 'Q': case 'd': case 'D': return 8;
    default: return -1;
    }
}

static PyObject *call_decoder(PyObject *decoders, Py_ssize_t c,
                              const unsigned char *p, Py_ssize_t size)
{
    PyObject *dec, *raw, *value;
    if (decoders == Py_None)
        return PyUnicode_DecodeUTF8((const char *)p, size, NULL);
    dec = PySequence_GetItem(decoders, c);
    if (dec == NULL)
        return NULL;
    raw = PyBytes_FromStringAndSize((const char *)p, size);
    if (raw == NULL) {
        Py_DECREF(dec);
        return NULL;
    }
    value = (dec == Py_None) ? PyUnicode_DecodeUTF8((const char *)p, size, NULL)
                             : PyObject_CallFunctionObjArgs(dec, raw, NULL);
    Py_DECREF(dec);
    Py_DECREF(raw);
    return value;
}

/* A one-dimensional array of numbers without NULL as a list, or NULL with no error
 * set when it has another shape (the caller's decoder reads it). */
static PyObject *flat_array(char kind, const unsigned char *p, Py_ssize_t size, int *other)
{
    Py_ssize_t n, k, w = width(kind);
    PyObject *list;
    *other = 0;
    if (size < 12) {
        *other = 1;
        return NULL;
    }
    if (i32(p) == 0)
        return PyList_New(0);
    if (i32(p) != 1 || i32(p + 4) != 0 || size < 20) {
        *other = 1;
        return NULL;
    }
    n = i32(p + 12);
    if (n < 0 || size != 20 + n * (4 + w)) {
        *other = 1;
        return NULL;
    }
    list = PyList_New(n);
    if (list == NULL)
        return NULL;
    p += 20;
    for (k = 0; k < n; k++, p += 4 + w) {
        PyObject *v;
        if (i32(p) != w) {
            Py_DECREF(list);
            *other = 1;
            return NULL;
        }
        v = number(kind, p + 4);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, v);
    }
    return list;
}

/* A bytea value: a view of ``size`` bytes of data at ``at``, without a copy. On 3.x,
 * a slice of one memoryview of data (*whole, made on the first bytea of a call). */
static PyObject *bytea(PyObject *data, PyObject **whole, Py_ssize_t at, Py_ssize_t size)
{
#if PY_MAJOR_VERSION >= 3
    if (*whole == NULL) {
        *whole = PyMemoryView_FromObject(data);
        if (*whole == NULL)
            return NULL;
    }
    /* A view of the whole, narrowed to the value: what slicing it gives (a 1-D byte
     * view shares the whole's buffer), without the slice object and index ints that
     * slicing builds for each value. */
    {
        PyObject *v = PyMemoryView_FromObject(*whole);
        Py_buffer *b;
        if (v == NULL)
            return NULL;
        b = PyMemoryView_GET_BUFFER(v);
        b->buf = (char *)b->buf + at;
        b->len = size;
        b->shape[0] = size;
        return v;
    }
#else
    (void)whole;
    return PyBuffer_FromObject(data, at, size);
#endif
}

static PyObject *value(char kind, PyObject *decoders, Py_ssize_t c,
                       const unsigned char *p, Py_ssize_t size)
{
    PyObject *v;
    int other;
    switch (kind) {
    case 'T':
        return PyUnicode_DecodeUTF8((const char *)p, size, NULL);
    case 'B':
        if (size != 1)
            break;
        v = p[0] == 1 ? Py_True : Py_False;
        Py_INCREF(v);
        return v;
    case 'h': case 'i': case 'q': case 'I': case 'd':
        if (size != width(kind))
            break;
        return number(kind, p);
    case 'H': case 'J': case 'Q': case 'O': case 'D':
        v = flat_array(kind, p, size, &other);
        if (v != NULL || !other)
            return v;
        return call_decoder(decoders, c, p, size);
    case 'x':
        return call_decoder(decoders, c, p, size);
    default:
        PyErr_Format(PyExc_ValueError, "unknown column kind %c", kind);
        return NULL;
    }
    PyErr_Format(PyExc_ValueError, "a column of kind %c has %zd bytes", kind, size);
    return NULL;
}

static PyObject *decode(PyObject *self, PyObject *args)
{
    PyObject *data, *kinds_obj, *decoders, *rows = NULL, *row = NULL, *whole = NULL;
    Py_buffer view;
    const unsigned char *buf;
    const char *kinds = NULL;
    Py_ssize_t nkinds = 0, pos = 0, end = -1;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO|nn:decode", &data, &kinds_obj, &decoders, &pos, &end))
        return NULL;
    if (kinds_obj != Py_None) {
        if (!KINDS_CHECK(kinds_obj)) {
            PyErr_SetString(PyExc_TypeError, "kinds must be bytes or None");
            return NULL;
        }
        kinds = PyBytes_AS_STRING(kinds_obj);
        nkinds = PyBytes_GET_SIZE(kinds_obj);
    }
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    buf = (const unsigned char *)view.buf;
    if (end < 0)
        end = view.len;
    if (pos < 0 || pos > end || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "start and end are not within the data");
        goto fail;
    }
    rows = PyList_New(0);
    if (rows == NULL)
        goto fail;
    while (pos < end) {
        Py_ssize_t length, stop, at, c, ncols;
        if (end - pos < 7 || buf[pos] != 'D') {
            PyErr_SetString(PyExc_ValueError, "not a DataRow message");
            goto fail;
        }
        length = (Py_ssize_t)be32(buf + pos + 1);
        ncols = (buf[pos + 5] << 8) | buf[pos + 6];
        stop = pos + 1 + length;
        if (length < 6 || stop > end) {
            PyErr_SetString(PyExc_ValueError, "a DataRow message runs past the data");
            goto fail;
        }
        if (kinds != NULL && ncols != nkinds) {
            PyErr_Format(PyExc_ValueError, "a data row has %zd columns, its statement %zd",
                         ncols, nkinds);
            goto fail;
        }
        row = PyTuple_New(ncols);
        if (row == NULL)
            goto fail;
        at = pos + 7;
        for (c = 0; c < ncols; c++) {
            Py_ssize_t size;
            PyObject *v;
            if (stop - at < 4)
                goto too_long;
            size = i32(buf + at);
            at += 4;
            if (size < 0) {
                Py_INCREF(Py_None);
                PyTuple_SET_ITEM(row, c, Py_None);
                continue;
            }
            if (stop - at < size)
                goto too_long;
            if (kinds == NULL)
                v = PyUnicode_DecodeUTF8((const char *)buf + at, size, NULL);
            else if (kinds[c] == 'y')
                v = bytea(data, &whole, at, size);
            else
                v = value(kinds[c], decoders, c, buf + at, size);
            if (v == NULL)
                goto fail;
            PyTuple_SET_ITEM(row, c, v);
            at += size;
        }
        if (at != stop) {
            PyErr_Format(PyExc_ValueError, "a data row is %zd bytes shorter than its message",
                         stop - at);
            goto fail;
        }
        if (PyList_Append(rows, row) < 0)
            goto fail;
        Py_CLEAR(row);
        pos = stop;
    }
    Py_XDECREF(whole);
    PyBuffer_Release(&view);
    return rows;
too_long:
    PyErr_SetString(PyExc_ValueError, "a data row is longer than its message");
fail:
    Py_XDECREF(whole);
    Py_XDECREF(row);
    Py_XDECREF(rows);
    PyBuffer_Release(&view);
    return NULL;
}

COMPILED_MODULE(_rowdecode, "DataRow messages to tuples (compiled).", decode,
                "decode(data, kinds, decoders[, start, end]) -> the DataRow messages of "
                "data[start:end] as a list of tuples")
