package openai_test

import (
	"testing"

	"github.com/weftlabs/weft/internal/providertest"
)

// The failures every provider must tell (internal/providertest says each).

func TestInvalidSuccessBody(t *testing.T) { providertest.InvalidSuccessBody(t, providertest.OpenAI()) }
func TestStreamStalls(t *testing.T)       { providertest.StreamStalls(t, providertest.OpenAI()) }
func TestFirstByteBound(t *testing.T)     { providertest.FirstByteBound(t, providertest.OpenAI()) }
func TestNothingListening(t *testing.T)   { providertest.NothingListening(t, providertest.OpenAI()) }
func TestEndlessBody(t *testing.T)        { providertest.EndlessBody(t, providertest.OpenAI()) }
func TestStreamCutShort(t *testing.T)     { providertest.StreamCutShort(t, providertest.OpenAI()) }
func TestStreamIdleIgnoresSlowConsumer(t *testing.T) {
	providertest.StreamIdleIgnoresSlowConsumer(t, providertest.OpenAI())
}
func TestStreamStoppedEarly(t *testing.T) { providertest.StreamStoppedEarly(t, providertest.OpenAI()) }

func FuzzGenerateBody(f *testing.F) { providertest.FuzzGenerateBody(f, providertest.OpenAI()) }
func FuzzStreamBody(f *testing.F)   { providertest.FuzzStreamBody(f, providertest.OpenAI()) }
