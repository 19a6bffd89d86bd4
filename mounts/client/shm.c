/* shm.c — file contents through shared memory.
 *
 * In a VM, QEMU's ivshmem device exposes a memory file that corral-fsd maps too: READ_SHM and
 * WRITE_SHM then carry only offsets on the virtio-serial port, and the bytes move through the
 * shared pages (under TCG the port costs a system call and a virtqueue kick per 4 KiB read).
 * The kernel cannot read FUSE requests into, or replies out of, a PCI BAR mapping (it pins user
 * pages, which such a mapping has none of: EFAULT), so contents are copied between the slots
 * and ordinary memory once each way. The server decides nothing from this memory; the client
 * trusts it only after finding the server's HELLO nonce in its header.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static bool
read_hex_file (const char *dir, const char *name, unsigned *ret)
{
        char path[512], buf[32];
        FILE *f;
        bool ok;

        snprintf (path, sizeof path, "%s/%s", dir, name);
        f = fopen (path, "re");
        if (!f)
                return false;
        ok = fgets (buf, sizeof buf, f) && sscanf (buf, "%x", ret) == 1;
        fclose (f);
        return ok;
}

/* The BAR of the first ivshmem-plain device (1af4:1110), which is the shared memory. */
static bool
find_ivshmem (char *path, size_t size)
{
        DIR *d = opendir ("/sys/bus/pci/devices");
        struct dirent *e;
        bool found = false;

        if (!d)
                return false;
        while (!found && (e = readdir (d))) {
                char dir[300];
                unsigned vendor, device;

                if (e->d_name[0] == '.')
                        continue;
                snprintf (dir, sizeof dir, "/sys/bus/pci/devices/%s", e->d_name);
                if (read_hex_file (dir, "vendor", &vendor) &&
                    read_hex_file (dir, "device", &device) && vendor == 0x1af4 &&
                    device == 0x1110) {
                        snprintf (path, size, "%s/resource2", dir);
                        found = true;
                }
        }
        closedir (d);
        return found;
}

void
fs_shm_open (Fs *fs)
{
        char pci[400];
        const char *path = fs->shm_path;
        struct stat st;
        void *p;
        int fd;

        if (!path && fs->transport == FS_TRANSPORT_SERIAL && find_ivshmem (pci, sizeof pci))
                path = pci;
        if (!path)
                return;
        fd = open (path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || fstat (fd, &st) < 0 || st.st_size < (off_t) (FS_SHM_HEADER + FS_SHM_SLOT)) {
                fs_log ("shared memory %s unusable; file contents go through the port", path);
                if (fd >= 0)
                        close (fd);
                return;
        }
        p = mmap (NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close (fd);
        if (p == MAP_FAILED) {
                fs_log ("cannot map %s: %s", path, strerror (errno));
                return;
        }
        fs->shm = p;
        fs->shm_map_size = (size_t) st.st_size;
}

void
fs_shm_check (Fs *fs, const char *nonce, int64_t server_size)
{
        size_t usable;

        fs->shm_ok = false;
        fs->shm_busy = 0;
        if (!fs->shm || server_size <= 0)
                return;
        if (memcmp (fs->shm, FS_SHM_MAGIC, sizeof FS_SHM_MAGIC) != 0 ||
            memcmp (fs->shm + 16, nonce, PROTO_NONCE_HEX_LEN) != 0) {
                fs_log ("the shared memory is not the server's; file contents go through the port");
                return;
        }
        usable = fs->shm_map_size < (size_t) server_size ? fs->shm_map_size : (size_t) server_size;
        if (usable > FS_SHM_MAX)
                usable = FS_SHM_MAX;
        fs->shm_slots = (uint32_t) ((usable - FS_SHM_HEADER) / FS_SHM_SLOT);
        if (fs->shm_slots > FS_SHM_MAX_SLOTS)
                fs->shm_slots = FS_SHM_MAX_SLOTS;
        if (!fs->shm_bounce)
                fs->shm_bounce = malloc (FS_MAX_IO);
        fs->shm_ok = fs->shm_slots >= 2 && fs->shm_bounce;
        fs_debug ("shared memory: %u slots", fs->shm_slots);
}

uint32_t
fs_shm_offset (int slot)
{
        return FS_SHM_HEADER + (uint32_t) slot * FS_SHM_SLOT;
}

int
fs_shm_take (Fs *fs)
{
        if (!fs->shm_ok)
                return -1;
        for (uint32_t i = 0; i < fs->shm_slots; i++) {
                if (fs->shm_busy & (UINT64_C (1) << i))
                        continue;
                fs->shm_busy |= UINT64_C (1) << i;
                return (int) i;
        }
        return -1;
}

void
fs_shm_release (Fs *fs, int slot)
{
        if (slot >= 0)
                fs->shm_busy &= ~(UINT64_C (1) << slot);
}
