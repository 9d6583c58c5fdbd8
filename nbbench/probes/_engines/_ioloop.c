/* The QD1 loop of the builtin engine in C: one pread64/pwrite64 after the other, a
 * CLOCK_MONOTONIC stamp after each (the clock of Python's time.perf_counter_ns), the GIL
 * released for the whole batch.  Built by `pip install .` where a compiler exists
 * (optional: without one, nbbench's pure-Python loop runs and the result says so). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <string.h>
#include <sys/syscall.h>
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
    int interrupted = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t i = start + k;
        char *p = b + (i % nbuf) * bs;
        ssize_t r = write ? pwrite(fd, p, (size_t)bs, (off_t)o[i]) : pread(fd, p, (size_t)bs, (off_t)o[i]);
        long long t = now_ns();
        if (r < 0) {
            if (errno == EINTR) {   /* a signal: let Python's handlers run, then the caller goes on */
                interrupted = 1;
                break;
            }
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
    if (interrupted && PyErr_CheckSignals() < 0)
        goto out;   /* e.g. KeyboardInterrupt, raised as the Python loop would */
    ret = Py_BuildValue("nL", done, last);
out:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&stamps);
    return ret;
}

/* ring_loop(ring_fd, sq_mm, cq_mm, sqe_mm, layout, offsets, pos, final, sub_t, lats, deadline_ns, bs, state, each)
 *   The io_uring loop of uring.py's "each" mode (each=1: one io_uring_enter per re-armed entry,
 *   fio's pattern) or "batch" mode (each=0), in C.  layout = (sq_tail, sq_array, sq_mask_value,
 *   cq_head, cq_tail, cq_mask_value, cqes): byte offsets into the mappings (the masks as values).
 *   state = [tail, submitted, inflight, go, done] (a list, updated in place).  Submission entries
 *   are pre-filled by Python (opcode, fd, buffer, length, user_data = slot); per I/O only the offset
 *   (at byte 8 of the 64-byte entry) and the index array are written.  Returns (pos, nlat, error,
 *   now, refused): it returns when nothing is in flight, when now >= deadline_ns, when fewer than the
 *   in-flight count of offsets are left (final=0: Python brings the next chunk), when `lats`
 *   could overflow, or when a submission was refused (EAGAIN/EBUSY) with none of ours in the kernel
 *   (refused=True: Python backs off, see uring_setup.BusyWait); error: None, or the first
 *   completion's result that was not bs (bytes, or -errno).  Refused with I/Os of ours in the
 *   kernel, it waits for one (to_submit=0, min_complete=1, GETEVENTS), reaps, and submits again. */
static PyObject *ring_loop(PyObject *self, PyObject *args)
{
    int rfd, final, each;
    Py_buffer sqb, cqb, sqeb, offs, subt, lats;
    Py_ssize_t o_sqt, o_sqa, o_cqh, o_cqt, o_cqes, pos, bs;
    unsigned long long sq_mask, cq_mask;
    long long deadline;
    PyObject *state;
    if (!PyArg_ParseTuple(args, "iw*w*w*(nnKnnKn)y*npw*w*LnO!p", &rfd, &sqb, &cqb, &sqeb, &o_sqt, &o_sqa, &sq_mask,
                          &o_cqh, &o_cqt, &cq_mask, &o_cqes, &offs, &pos, &final, &subt, &lats, &deadline, &bs,
                          &PyList_Type, &state, &each))
        return NULL;
    PyObject *ret = NULL;
    long long st[5];
    if (PyList_GET_SIZE(state) != 5) {
        PyErr_SetString(PyExc_ValueError, "ring_loop: state must be [tail, submitted, inflight, go, done]");
        goto out;
    }
    for (int i = 0; i < 5; i++) {
        st[i] = PyLong_AsLongLong(PyList_GET_ITEM(state, i));
        if (st[i] == -1 && PyErr_Occurred())
            goto out;
    }
    Py_ssize_t n_offs = offs.len / 8, nslots = subt.len / 8, lat_cap = lats.len / 8;
    if (o_sqt + 4 > sqb.len || o_cqh + 4 > cqb.len || o_cqt + 4 > cqb.len
        || o_cqes + (Py_ssize_t)(cq_mask + 1) * 16 > cqb.len || o_sqa + (Py_ssize_t)(sq_mask + 1) * 4 > sqb.len
        || (Py_ssize_t)nslots * 64 > sqeb.len || pos < 0 || pos > n_offs || lat_cap < (Py_ssize_t)(cq_mask + 1)) {
        PyErr_SetString(PyExc_ValueError, "ring_loop: a mapping, offsets, slot or latency array too small");
        goto out;
    }
    char *sq = (char *)sqb.buf, *cq = (char *)cqb.buf, *sqe = (char *)sqeb.buf;
    uint32_t *sq_tail = (uint32_t *)(sq + o_sqt), *sq_arr = (uint32_t *)(sq + o_sqa);
    uint32_t *cq_head = (uint32_t *)(cq + o_cqh), *cq_tail = (uint32_t *)(cq + o_cqt);
    const int64_t *o = (const int64_t *)offs.buf;
    int64_t *sub = (int64_t *)subt.buf, *lat = (int64_t *)lats.buf;
    unsigned long long tail = (unsigned long long)st[0], submitted = (unsigned long long)st[1];
    long long inflight = st[2], done = st[4];
    int go = (int)st[3];
    Py_ssize_t nlat = 0;
    long long error = 0, now = now_ns();
    int sys_errno = 0, interrupted = 0, has_err = 0, refused = 0;
    Py_BEGIN_ALLOW_THREADS
    while (inflight > 0) {
        if (!final && go && n_offs - pos < inflight)
            break;                                   /* bring more offsets first */
        if (lat_cap - nlat < inflight)
            break;                                   /* let Python take the latencies */
        __atomic_store_n(sq_tail, (uint32_t)tail, __ATOMIC_RELEASE);
        long r = syscall(426, rfd, (unsigned)(tail - submitted), 1u, 1u, NULL, 0);
        if (r < 0) {
            if (errno == EINTR) {
                interrupted = 1;
                break;
            }
            if (errno == EAGAIN || errno == EBUSY) {
                if (inflight <= (long long)(tail - submitted)) {
                    refused = 1;                     /* nothing of ours to wait for: Python backs off */
                    break;
                }
                syscall(426, rfd, 0u, 1u, 1u, NULL, 0); /* wait for one, then reap and submit again */
                r = 0;
            } else {
                sys_errno = errno;
                break;
            }
        }
        submitted += (unsigned long long)r;
        now = now_ns();
        uint32_t head = *cq_head, ctail = __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE);
        while (head != ctail) {
            const char *c = cq + o_cqes + (Py_ssize_t)(head & cq_mask) * 16;
            uint64_t slot;
            int32_t res;
            memcpy(&slot, c, 8);
            memcpy(&res, c + 8, 4);
            head++;
            if ((Py_ssize_t)slot >= nslots) {        /* not ours: cannot happen on our own ring */
                inflight--;
                continue;
            }
            lat[nlat++] = now - sub[slot];
            if (res != bs) {
                if (!has_err) {
                    has_err = 1;
                    error = res;
                }
                go = 0;
                inflight--;
                continue;
            }
            done++;
            if (go && pos < n_offs) {
                int64_t off = o[pos++];
                memcpy(sqe + slot * 64 + 8, &off, 8);
                sq_arr[tail & sq_mask] = (uint32_t)slot;
                tail++;
                sub[slot] = now;
                if (each) {
                    __atomic_store_n(sq_tail, (uint32_t)tail, __ATOMIC_RELEASE);
                    long r1 = syscall(426, rfd, 1u, 0u, 0u, NULL, 0);
                    if (r1 > 0)
                        submitted += (unsigned long long)r1;
                }
            } else {
                if (go)
                    go = 0;                          /* final offsets used up: the slots retire */
                inflight--;
            }
        }
        __atomic_store_n(cq_head, head, __ATOMIC_RELEASE);
        if (now >= deadline)
            break;
    }
    __atomic_store_n(sq_tail, (uint32_t)tail, __ATOMIC_RELEASE);
    Py_END_ALLOW_THREADS
    st[0] = (long long)tail;
    st[1] = (long long)submitted;
    st[2] = inflight;
    st[3] = go;
    st[4] = done;
    for (int i = 0; i < 5; i++) {
        PyObject *v = PyLong_FromLongLong(st[i]);
        if (v == NULL || PyList_SetItem(state, i, v) < 0)
            goto out;
    }
    if (sys_errno) {
        errno = sys_errno;
        PyErr_SetFromErrno(PyExc_OSError);
        goto out;
    }
    if (interrupted && PyErr_CheckSignals() < 0)
        goto out;
    ret = has_err ? Py_BuildValue("nnLLO", pos, nlat, error, now, refused ? Py_True : Py_False)
                  : Py_BuildValue("nnOLO", pos, nlat, Py_None, now, refused ? Py_True : Py_False);
out:
    PyBuffer_Release(&sqb);
    PyBuffer_Release(&cqb);
    PyBuffer_Release(&sqeb);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&subt);
    PyBuffer_Release(&lats);
    return ret;
}

static PyMethodDef methods[] = {
    {"io_loop", io_loop, METH_VARARGS, "QD1 pread/pwrite loop with a completion stamp per I/O (see the C source)."},
    {"ring_loop", ring_loop, METH_VARARGS, "The io_uring submit/reap loop (see the C source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ioloop", "nbbench's compiled QD1 I/O loop.", -1, methods};

PyMODINIT_FUNC PyInit__ioloop(void) { return PyModule_Create(&module); }
