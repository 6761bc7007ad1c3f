package lds

import "os"

// semaphorePresent reports whether a registration's semaphore file exists (Part 4
// §5.4.5.2: the registration lasts only as long as the file).
func semaphorePresent(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
