/*
 * tsan_race.c - a data race on purpose, for the ThreadSanitizer build's
 * tsan_detects_race test (harness/tests/CMakeLists.txt): two threads add to
 * one counter without a lock.  ThreadSanitizer must report it; the test
 * passes only on that report, so a build without the instrumentation (or
 * TSAN_OPTIONS that do not end the process) cannot pass the threads stage.
 */
#include <pthread.h>
#include <stdio.h>

static long counter;

static void *add(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100000; i++)
		counter++;
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	if (pthread_create(&a, NULL, add, NULL) || pthread_create(&b, NULL, add, NULL)) {
		fprintf(stderr, "tsan_race: pthread_create failed\n");
		return 2;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("counter %ld\n", counter);
	return 0;
}
