/* info.c — the info method (kernel, host name, uptime, memory, disk, versions) and
 * system.poweroff.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

/* A /proc/meminfo value ("MemTotal:  123 kB") in bytes, or -1. */
static double
meminfo (const char *key)
{
        char line[256];
        size_t klen = strlen (key);
        double v = -1;
        FILE *f = fopen ("/proc/meminfo", "re");

        if (!f)
                return -1;
        while (fgets (line, sizeof line, f)) {
                unsigned long long kb;

                if (strncmp (line, key, klen) == 0 && line[klen] == ':' &&
                    sscanf (line + klen + 1, "%llu", &kb) == 1) {
                        v = (double) kb * 1024.0;
                        break;
                }
        }
        fclose (f);
        return v;
}

static double
uptime_s (void)
{
        double up = -1;
        FILE *f = fopen ("/proc/uptime", "re");

        if (!f)
                return -1;
        if (fscanf (f, "%lf", &up) != 1)
                up = -1;
        fclose (f);
        return up < 0 ? -1 : (double) (long long) up;
}

void
method_info (Agent *a, uint64_t id, const cJSON *params)
{
        cJSON *res = cJSON_CreateObject ();
        struct utsname un;
        struct statvfs vfs;
        char host[256] = "";

        if (!res) {
                agent_respond_error (a, id, "internal", "out of memory", 0);
                return;
        }
        if (uname (&un) == 0) {
                char kernel[sizeof un.release + sizeof un.sysname + 2];

                snprintf (kernel, sizeof kernel, "%s %s", un.sysname, un.release);
                json_add_string_bytes (res, "kernel", kernel, strlen (kernel));
        }
        if (gethostname (host, sizeof host - 1) == 0)
                json_add_string_bytes (res, "hostname", host, strlen (host));
        json_add_number (res, "uptime_s", uptime_s ());
        json_add_number (res, "mem_total", meminfo ("MemTotal"));
        json_add_number (res, "mem_available", meminfo ("MemAvailable"));
        if (statvfs ("/", &vfs) == 0) {
                json_add_number (res, "disk_total", (double) vfs.f_blocks * (double) vfs.f_frsize);
                json_add_number (res, "disk_free", (double) vfs.f_bavail * (double) vfs.f_frsize);
        }
        cJSON_AddStringToObject (res, "agent_version", CORRAL_VERSION);
        json_add_number (res, "proto_version", PROTO_VERSION);
        json_add_number (res, "procs", a->n_procs);
        confine_describe (&a->confine, res);
        agent_respond (a, id, res);
}

/* The VM's graceful stop. The agent's commands run as an unprivileged user, so the host cannot
 * run poweroff itself; this asks PID 1, busybox init in Corral's images, which takes SIGUSR2 as
 * "power off": it runs the inittab's shutdown actions, stops every process and powers off. Only
 * with --allow-poweroff, which the images' init passes: an agent started anywhere else (a test,
 * `corralctl exec --local`) must never signal its machine's init. */
void
method_system_poweroff (Agent *a, uint64_t id, const cJSON *params)
{
        if (!a->allow_poweroff) {
                agent_respond_error (a, id, "permission-denied",
                                     "this agent was not started by a VM's init "
                                     "(--allow-poweroff): it does not power its machine off",
                                     EPERM);
                return;
        }
        sync ();
        if (kill (1, SIGUSR2) < 0) {
                int errsv = errno;
                agent_respond_error (a, id, "io", strerror (errsv), errsv);
                return;
        }
        agent_respond (a, id, cJSON_CreateObject ());
}
