/* The compiled fast paths of the IPROTO stream: replies.ReplyParser's (frames to
 * replies), the single-waiter call and the request's framing.
 *
 * Optional: setup.py builds it where a C compiler and the interpreter's headers are
 * at hand; replies.ReplyParser uses it when it is there (and GLOADDRIVER_PURE_PYTHON
 * is not set) and reads with msgpack alone when it is not. Both give the same replies
 * for the same bytes: tests/unit/test_replies.py runs every case through both.
 *
 * cut(data, start, rows, error, out) -> (end, need, stuck)
 *   data   a buffer (the reader's memoryview slice, or bytes): read in place
 *   start  where a frame begins in data
 *   rows   protocol.Rows (a bytes subclass): the body of an OK or CHUNK reply
 *   error  error(code, body bytes) -> the exception of an error reply
 *   out    the list each reply (sync, code, body) is appended to
 * Reads frames from start while they are whole and of the form a server writes: a
 * length prefix 0xce + uint32, a header that is a fixmap of positive fixint keys to
 * unsigned integers with REQUEST_TYPE (0) and SYNC (1) among them. Returns where it
 * stopped (end), the length of the frame there when its prefix is whole (need, else
 * 0), and whether that frame is of another form (stuck: the msgpack reader takes the
 * stream over from end, and gives the same replies or the same ProtocolError).
 * An empty result's body (EMPTY_BODIES) is [], as the Python reader gives.
 *
 * alone(...): the single-waiter path's send, wait and read in one call (see below).
 *
 * frame(...): the request path's head and body appended to the outgoing buffer in one
 * call (see below).
 *
 * One source for CPython 2.7 and 3.x: the few calls that differ are the macros below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../compiled_module.h"
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#if PY_MAJOR_VERSION >= 3
#define BYTES_FROM(p, n) PyBytes_FromStringAndSize((const char *)(p), (n))
#define BYTES_OBJECT PyBytesObject
#define BYTES_STRING(o) PyBytes_AS_STRING(o)
#define BYTES_TYPE PyBytes_Type
#define INT_OBJECT(n) PyLong_FromSsize_t(n)
#define INT_AS_LONG(o) PyLong_AsLong(o)
#define INT_AS_ULL(o) PyLong_AsUnsignedLongLongMask(o)
#define BYTES_CHECK(o) PyBytes_Check(o)
#else
#define BYTES_FROM(p, n) PyString_FromStringAndSize((const char *)(p), (n))
#define BYTES_OBJECT PyStringObject
#define BYTES_STRING(o) PyString_AS_STRING(o)
#define BYTES_TYPE PyString_Type
#define INT_OBJECT(n) PyInt_FromSsize_t(n)
#define INT_AS_LONG(o) PyInt_AsLong(o)
#define INT_AS_ULL(o) PyInt_AsUnsignedLongLongMask(o)
#define BYTES_CHECK(o) PyString_Check(o)
#endif

#ifdef MSG_NOSIGNAL
#define SEND_FLAGS MSG_NOSIGNAL
#else
#define SEND_FLAGS 0
#endif

#define REQUEST_TYPE 0x00
#define SYNC 0x01
#define OK 0x00
#define CHUNK 0x80

static PyObject *uint_object(unsigned PY_LONG_LONG v)
{
#if PY_MAJOR_VERSION < 3
    if (v <= (unsigned PY_LONG_LONG)LONG_MAX)
        return PyInt_FromLong((long)v);
#endif
    return PyLong_FromUnsignedLongLong(v);
}

/* An unsigned msgpack integer at p (at most left bytes): its size, 0 if it is not
 * one, -1 if it goes past left. */
static Py_ssize_t read_uint(const unsigned char *p, Py_ssize_t left,
                            unsigned PY_LONG_LONG *v)
{
    Py_ssize_t size, k;
    if (left < 1)
        return -1;
    if (p[0] < 0x80) {
        *v = p[0];
        return 1;
    }
    switch (p[0]) {
    case 0xcc: size = 1; break;
    case 0xcd: size = 2; break;
    case 0xce: size = 4; break;
    case 0xcf: size = 8; break;
    default: return 0;
    }
    if (left < size + 1)
        return -1;
    *v = 0;
    for (k = 1; k <= size; k++)
        *v = (*v << 8) | p[k];
    return size + 1;
}

/* A Rows of n bytes at p, made as bytes' own constructor makes a subclass's: the
 * type's allocation, the bytes copied in, the hash not yet known. */
static PyObject *make_rows(PyTypeObject *rows, const unsigned char *p, Py_ssize_t n)
{
    PyObject *o;
    if (rows->tp_itemsize != 1 || rows->tp_basicsize != BYTES_TYPE.tp_basicsize) {
        PyObject *b = BYTES_FROM(p, n), *r;    /* a subclass that adds fields: its own call */
        if (b == NULL)
            return NULL;
        r = PyObject_CallFunctionObjArgs((PyObject *)rows, b, NULL);
        Py_DECREF(b);
        return r;
    }
    o = rows->tp_alloc(rows, n);
    if (o == NULL)
        return NULL;
    memcpy(BYTES_STRING(o), p, n);
    BYTES_STRING(o)[n] = '\0';
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    ((BYTES_OBJECT *)o)->ob_shash = -1;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    return o;
}

static int empty_body(const unsigned char *p, Py_ssize_t n)
{
    static const unsigned char long_form[7] = {0x81, 0x30, 0xdd, 0, 0, 0, 0};
    static const unsigned char short_form[3] = {0x81, 0x30, 0x90};
    return (n == 7 && memcmp(p, long_form, 7) == 0) ||
           (n == 3 && memcmp(p, short_form, 3) == 0);
}

/* The length a frame's 0xce prefix at p gives (its 4 bytes after p[0]). */
static Py_ssize_t frame_length(const unsigned char *p)
{
    return ((Py_ssize_t)p[1] << 24) | ((Py_ssize_t)p[2] << 16) | ((Py_ssize_t)p[3] << 8) |
           (Py_ssize_t)p[4];
}

/* The body of an OK or CHUNK reply, n bytes at p: [] for an empty result, else a Rows. */
static PyObject *ok_body(PyTypeObject *rows, const unsigned char *p, Py_ssize_t n)
{
    return empty_body(p, n) ? PyList_New(0) : make_rows(rows, p, n);
}

/* The header at *pp (the frame's bytes at hand end at end): a fixmap of positive fixint
 * keys to unsigned integers; *pp is moved past it. Returns 0 when it is read (code and
 * sync set where their keys are there), 1 when a byte is of another form, -1 when the
 * bytes at hand end first. */
static int read_header(const unsigned char **pp, const unsigned char *end,
                       unsigned PY_LONG_LONG *code, int *has_code,
                       unsigned PY_LONG_LONG *sync, int *has_sync)
{
    const unsigned char *p = *pp;
    unsigned PY_LONG_LONG key, value;
    Py_ssize_t n, k, used;

    if (p >= end)
        return -1;
    if ((p[0] & 0xf0) != 0x80)
        return 1;
    n = p[0] & 0x0f;
    p++;
    for (k = 0; k < n; k++) {
        if (p >= end)
            return -1;
        if (p[0] >= 0x80)
            return 1;
        key = p[0];
        used = read_uint(p + 1, end - p - 1, &value);
        if (used <= 0)
            return used == 0 ? 1 : -1;
        p += 1 + used;
        if (key == REQUEST_TYPE) {
            *code = value;
            *has_code = 1;
        } else if (key == SYNC) {
            *sync = value;
            *has_sync = 1;
        }
    }
    *pp = p;
    return 0;
}

static PyObject *cut(PyObject *self, PyObject *args)
{
    PyObject *data, *rows, *error, *out, *reply = NULL;
    Py_ssize_t pos, len, need = 0;
    int stuck = 0;
    Py_buffer view;
    const unsigned char *buf;

    if (!PyArg_ParseTuple(args, "OnOOO!", &data, &pos, &rows, &error, &PyList_Type, &out))
        return NULL;
    if (!PyType_Check(rows)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a type");
        return NULL;
    }
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    buf = (const unsigned char *)view.buf;
    len = view.len;
    if (pos < 0 || pos > len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "start is outside the data");
        return NULL;
    }
    while (pos < len) {
        const unsigned char *p = buf + pos, *end;
        Py_ssize_t size;
        unsigned PY_LONG_LONG code = 0, sync = 0;
        int has_code = 0, has_sync = 0, whole, bad;
        PyObject *body, *s, *c;

        if (p[0] != 0xce) {
            stuck = 1;
            break;
        }
        if (len - pos < 5)
            break;
        size = frame_length(p);
        whole = len - pos - 5 >= size;
        end = whole ? p + 5 + size : buf + len;    /* the frame's bytes at hand */
        p += 5;
        bad = read_header(&p, end, &code, &has_code, &sync, &has_sync);
        if (!whole) {
            /* Wait for the rest, unless what is here already is of another form: the
             * msgpack reader would say so now. */
            if (bad == 1)
                stuck = 1;
            else
                need = size + 5;
            break;
        }
        if (bad || !has_code || !has_sync) {
            stuck = 1;
            break;
        }
        s = uint_object(sync);
        c = uint_object(code);
        if (s == NULL || c == NULL)
            body = NULL;
        else if (code == OK || code == CHUNK)
            body = ok_body((PyTypeObject *)rows, p, end - p);
        else {
            PyObject *raw = BYTES_FROM(p, end - p);
            body = raw == NULL ? NULL : PyObject_CallFunctionObjArgs(error, c, raw, NULL);
            Py_XDECREF(raw);
        }
        reply = body == NULL ? NULL : PyTuple_New(3);
        if (reply == NULL) {
            Py_XDECREF(s);
            Py_XDECREF(c);
            Py_XDECREF(body);
            goto fail;
        }
        PyTuple_SET_ITEM(reply, 0, s);
        PyTuple_SET_ITEM(reply, 1, c);
        PyTuple_SET_ITEM(reply, 2, body);
        if (PyList_Append(out, reply) < 0)
            goto fail;
        Py_CLEAR(reply);
        pos = end - buf;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nnO", pos, need, stuck ? Py_True : Py_False);
fail:
    Py_XDECREF(reply);
    PyBuffer_Release(&view);
    return NULL;
}

/* alone(fd, out, sync, buf, wait_ms, rows) -> body, or the number of bytes read
 *
 * The single-waiter path's one call (connection.Connection._alone): send all of ``out``
 * (a bytearray: the frames not yet sent, the caller's last) on the non-blocking socket
 * fd, poll it up to wait_ms for the reply, and read what is there into ``buf`` (the
 * reader's bytearray). Returns:
 *   the reply's body (rows, or [] for an empty result) when the read is exactly one
 *     whole frame of the cutter's form, an OK reply to ``sync``: the usual case;
 *   n > 0 when n bytes were read that are anything else: the caller feeds buf[:n] to
 *     its parser (which must hold no partial frame: the caller checks);
 *   0 when nothing was read: no reply within wait_ms, or the socket's end or error,
 *     which the hub's reader meets again and reports; or ``out`` was sent in part,
 *     not waited for (the socket's buffer is full): the rest is left in ``out``;
 *   -errno when nothing could be sent (EAGAIN: the socket's buffer is full, or a
 *     signal came first): the caller's flush sends it when it can, or says the
 *     socket is lost, as it would.
 * What is sent is taken off ``out``'s front. The interpreter lock is released while
 * it waits; a signal's handler runs before it returns, and what the handler raises
 * (KeyboardInterrupt) is raised by the call. */
static PyObject *alone(PyObject *self, PyObject *args)
{
    PyObject *out, *buf, *rows;
    unsigned PY_LONG_LONG want, code = 0, sync = 0;
    int fd, wait_ms, ready, waited = 0, has_code = 0, has_sync = 0;
    Py_ssize_t len, n = 0, size;
    ssize_t sent;
    Py_buffer view;
    struct pollfd pfd;
    const unsigned char *p, *end;

    if (!PyArg_ParseTuple(args, "iO!KO!iO", &fd, &PyByteArray_Type, &out, &want,
                          &PyByteArray_Type, &buf, &wait_ms, &rows))
        return NULL;
    if (!PyType_Check(rows)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a type");
        return NULL;
    }
    /* A buffer exported elsewhere cannot be shortened after the send: leave it to the
     * flush, which replaces it, before anything goes. */
    if (((PyByteArrayObject *)out)->ob_exports > 0)
        return INT_OBJECT(-EAGAIN);
    len = PyByteArray_GET_SIZE(out);
    if (len) {
        sent = send(fd, PyByteArray_AS_STRING(out), (size_t)len, SEND_FLAGS);
        if (sent < 0) {
            int e = errno;
            /* A signal first: its handler runs now (a KeyboardInterrupt is raised here,
             * where the caller takes its waiter out), else the flush tries again. */
            if (e == EINTR && PyErr_CheckSignals() < 0)
                return NULL;
            return INT_OBJECT(e == EWOULDBLOCK || e == EINTR ? -EAGAIN : -e);
        }
        if (sent < len) {
            char *data = PyByteArray_AS_STRING(out);
            memmove(data, data + sent, (size_t)(len - sent));
            if (PyByteArray_Resize(out, len - sent) < 0)
                return NULL;
            return INT_OBJECT(0);
        }
        if (PyByteArray_Resize(out, 0) < 0)
            return NULL;
    }
    if (PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE) < 0)
        return NULL;
    pfd.fd = fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    Py_BEGIN_ALLOW_THREADS
    ready = poll(&pfd, 1, wait_ms);
    if (ready < 0)
        waited = errno;
    if (ready > 0) {
        sent = recv(fd, view.buf, (size_t)view.len, 0);
        n = sent > 0 ? (Py_ssize_t)sent : 0;
    }
    Py_END_ALLOW_THREADS
    if (waited == EINTR && PyErr_CheckSignals() < 0) {   /* as a send's signal, above */
        PyBuffer_Release(&view);
        return NULL;
    }
    p = (const unsigned char *)view.buf;
    if (n > 5 && p[0] == 0xce) {
        size = frame_length(p);
        end = p + n;
        p += 5;
        if (size == n - 5 && read_header(&p, end, &code, &has_code, &sync, &has_sync) == 0 &&
                has_code && has_sync && code == OK && sync == want) {
            PyObject *body = ok_body((PyTypeObject *)rows, p, end - p);
            PyBuffer_Release(&view);
            return body;
        }
    }
    PyBuffer_Release(&view);
    return INT_OBJECT(n);
}

/* frame(out, code, sync, parts): append one request to ``out``
 *
 * The request path's framing (connection.Connection.rows_frame): the head of a request
 * of type ``code`` (a positive fixint) and ``sync`` (sent as a uint64), then the body,
 * the bytes objects of the tuple ``parts`` joined, appended to the bytearray ``out``
 * with one resize. The same bytes as protocol._pack_head(0xce, _HEAD_AFTER_LEN +
 * len(body), 0x82, REQUEST_TYPE, code, SYNC, 0xcf, sync) + b''.join(parts): a body
 * built by a join and then copied into ``out`` costs a 1.5 KB allocation and a copy
 * more per write. */
#define HEAD_SIZE 18

static void put_be(unsigned char *p, unsigned PY_LONG_LONG v, int n)
{
    while (n--) {
        p[n] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
}

static PyObject *frame(PyObject *self, PyObject *args)
{
    PyObject *out, *code_obj, *sync_obj, *parts;
    unsigned PY_LONG_LONG sync;
    long code;
    Py_ssize_t i, nparts, body = 0, old;
    unsigned char *p;

    if (PyTuple_GET_SIZE(args) != 4) {
        PyErr_SetString(PyExc_TypeError, "frame(out, code, sync, parts) takes 4 arguments");
        return NULL;
    }
    out = PyTuple_GET_ITEM(args, 0);
    code_obj = PyTuple_GET_ITEM(args, 1);
    sync_obj = PyTuple_GET_ITEM(args, 2);
    parts = PyTuple_GET_ITEM(args, 3);
    if (!PyByteArray_Check(out) || !PyTuple_Check(parts)) {
        PyErr_SetString(PyExc_TypeError, "frame: out must be a bytearray, parts a tuple");
        return NULL;
    }
    code = INT_AS_LONG(code_obj);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    if (code < 0 || code > 0x7f) {
        PyErr_SetString(PyExc_ValueError, "frame: code must be 0..127");
        return NULL;
    }
    sync = INT_AS_ULL(sync_obj);
    if (sync == (unsigned PY_LONG_LONG)-1 && PyErr_Occurred())
        return NULL;
    nparts = PyTuple_GET_SIZE(parts);
    for (i = 0; i < nparts; i++) {
        PyObject *part = PyTuple_GET_ITEM(parts, i);
        if (!BYTES_CHECK(part)) {
            PyErr_SetString(PyExc_TypeError, "frame: each part must be bytes");
            return NULL;
        }
        body += Py_SIZE(part);
    }
    if (body > 0xffffffffL - (HEAD_SIZE - 5)) {
        PyErr_SetString(PyExc_ValueError, "frame: the body is too long for IPROTO");
        return NULL;
    }
    old = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, old + HEAD_SIZE + body) < 0)
        return NULL;    /* a BufferError when something holds a view of it */
    p = (unsigned char *)PyByteArray_AS_STRING(out) + old;
    p[0] = 0xce;
    put_be(p + 1, (unsigned PY_LONG_LONG)(HEAD_SIZE - 5 + body), 4);
    p[5] = 0x82;
    p[6] = REQUEST_TYPE;
    p[7] = (unsigned char)code;
    p[8] = SYNC;
    p[9] = 0xcf;
    put_be(p + 10, sync, 8);
    p += HEAD_SIZE;
    for (i = 0; i < nparts; i++) {
        PyObject *part = PyTuple_GET_ITEM(parts, i);
        memcpy(p, BYTES_STRING(part), (size_t)Py_SIZE(part));
        p += Py_SIZE(part);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"cut", cut, METH_VARARGS,
     "cut(data, start, rows, error, out) -> (end, need, stuck): the whole IPROTO frames of "
     "data from start appended to out as (sync, code, body)"},
    {"alone", alone, METH_VARARGS,
     "alone(fd, out, sync, buf, wait_ms, rows) -> body or bytes read: the single-waiter "
     "path's send, wait and read"},
    {"frame", frame, METH_VARARGS,
     "frame(out, code, sync, parts): one request's head and body (the bytes of parts) "
     "appended to the bytearray out"},
    {NULL, NULL, 0, NULL}};

COMPILED_MODULE_TABLE(_replycut, "IPROTO frames to replies, requests to frames, and the "
                      "single-waiter path (compiled).")
