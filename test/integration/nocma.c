/**
 * ucx-spec test shim: a kernel that forbids cross-memory attach, as a
 * seccomp profile or Yama's ptrace_scope=3 does.  LD_PRELOAD it.
 *
 * See file LICENSE for terms.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <sys/uio.h>

ssize_t process_vm_writev(pid_t pid, const struct iovec *local,
                          unsigned long liovcnt, const struct iovec *remote,
                          unsigned long riovcnt, unsigned long flags)
{
    errno = EPERM;
    return -1;
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *local,
                         unsigned long liovcnt, const struct iovec *remote,
                         unsigned long riovcnt, unsigned long flags)
{
    errno = EPERM;
    return -1;
}
