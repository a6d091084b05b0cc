/*
 * pause: the sandbox ("infra") container process of a pod, as in upstream
 * kubernetes build/pause/linux/pause.c.
 *
 * It holds the pod's namespaces open and does nothing else:
 *   - blocks in pause() forever;
 *   - exits 0 on SIGINT or SIGTERM;
 *   - reaps every child that exits (it is PID 1 of the pod when the pod
 *     shares its PID namespace);
 *   - `pause -v` prints the version and exits.
 *
 * Built by hack/lib/runtime-images.sh with `cc -static -Os`.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef VERSION
#define VERSION "kubelet-rs"
#endif

static void on_shutdown(int signo)
{
	(void)signo;
	_exit(0);
}

static void on_child(int signo)
{
	int saved_errno = errno;
	(void)signo;
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
	errno = saved_errno;
}

static int install(int signo, void (*handler)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	return sigaction(signo, &sa, NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		printf("pause.c %s\n", VERSION);
		return 0;
	}
	if (getpid() != 1) {
		fprintf(stderr, "Warning: pause should be the first process\n");
	}
	if (install(SIGINT, on_shutdown, 0) < 0 || install(SIGTERM, on_shutdown, 0) < 0) {
		perror("sigaction shutdown");
		return 1;
	}
	if (install(SIGCHLD, on_child, SA_NOCLDSTOP | SA_RESTART) < 0) {
		perror("sigaction SIGCHLD");
		return 2;
	}
	for (;;) {
		pause();
	}
	return 42;
}
