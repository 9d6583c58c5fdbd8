/* The QD1 loop of the builtin engine in C: one pread64/pwrite64 after the other, a
 * CLOCK_MONOTONIC stamp after each (the clock of Python's time.perf_counter_ns), the GIL
 * released for the whole batch.  Built by `pip install .` where a compiler exists
 * (optional: without one, nbbench's pure-Python loop runs and the result says so). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static inline long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* io_loop(fd, buf, bs, nbuf, offsets, start, count, stamps, deadline_ns, write)
 *   -> (done, last): `done` I/Os completed (stamps[0:done] hold their completion times);
 *   the loop stops after `count` I/Os, after the first whose stamp is >= deadline_ns, or after
 *   a short or failed one (`last`: its byte count, or -errno); else `last` is bs.
 *   I/O k reads or writes buffer (start + k) % nbuf of `buf` at offsets[start + k]. */
static PyObject *io_loop(PyObject *self, PyObject *args)
{
    int fd, write;
    Py_buffer buf, offs, stamps;
    Py_ssize_t bs, nbuf, start, count;
    long long deadline;
    if (!PyArg_ParseTuple(args, "iw*nny*nnw*Lp", &fd, &buf, &bs, &nbuf, &offs, &start, &count, &stamps,
                          &deadline, &write))
        return NULL;
    PyObject *ret = NULL;
    Py_ssize_t n_offs = offs.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t n_st = stamps.len / (Py_ssize_t)sizeof(int64_t);
    if (bs <= 0 || nbuf <= 0 || bs * nbuf > buf.len || start < 0 || count < 0 || start + count > n_offs
        || count > n_st) {
        PyErr_SetString(PyExc_ValueError, "io_loop: buffer, offsets or stamps too small for the arguments");
        goto out;
    }
    const int64_t *o = (const int64_t *)offs.buf;
    int64_t *st = (int64_t *)stamps.buf;
    char *b = (char *)buf.buf;
    Py_ssize_t done = 0;
    long long last = bs;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t i = start + k;
        char *p = b + (i % nbuf) * bs;
        ssize_t r = write ? pwrite(fd, p, (size_t)bs, (off_t)o[i]) : pread(fd, p, (size_t)bs, (off_t)o[i]);
        long long t = now_ns();
        if (r < 0) {
            last = -(long long)errno;
            break;
        }
        st[k] = t;
        done++;
        if (r != bs) {
            last = r;
            break;
        }
        if (t >= deadline)
            break;
    }
    Py_END_ALLOW_THREADS
    ret = Py_BuildValue("nL", done, last);
out:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&stamps);
    return ret;
}

static PyMethodDef methods[] = {
    {"io_loop", io_loop, METH_VARARGS, "QD1 pread/pwrite loop with a completion stamp per I/O (see the C source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ioloop", "nbbench's compiled QD1 I/O loop.", -1, methods};

PyMODINIT_FUNC PyInit__ioloop(void) { return PyModule_Create(&module); }
